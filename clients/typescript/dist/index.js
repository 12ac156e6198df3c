// src/client.ts
import * as grpc2 from "@grpc/grpc-js";

// src/acks.ts
import { Metadata, status as Status2 } from "@grpc/grpc-js";

// src/errors.ts
import { status as Status } from "@grpc/grpc-js";

// src/rejection.ts
function isJobRejection(result) {
  return typeof result === "object" && result !== null && typeof result.kind === "string" && !("jobId" in result);
}
function describeJobRejection(rejection) {
  const list = (values) => values.map((value) => JSON.stringify(value)).join(", ");
  switch (rejection.kind) {
    case "unknownQueue":
      return `unknown queue ${JSON.stringify(rejection.queue)}`;
    case "payloadTooLarge":
      return `payload too large: ${rejection.actual} bytes, limit ${rejection.limit}`;
    case "encodingNotAllowed":
      return `encoding ${JSON.stringify(rejection.encoding)} not allowed (allowed: ${list(rejection.allowed)})`;
    case "jobTypeNotAllowed":
      return `job type ${JSON.stringify(rejection.jobType)} not allowed (allowed: ${list(rejection.allowed)})`;
    case "customEntriesTooMany":
      return `too many custom entries: ${rejection.actual}, limit ${rejection.limit}`;
    case "customMapTooLarge":
      return `custom map too large: ${rejection.actual} bytes, limit ${rejection.limit}`;
    case "customKeyTooLong":
      return `custom key ${JSON.stringify(rejection.key)} too long: ${rejection.actual} bytes, limit ${rejection.limit}`;
    case "queueNameTooLong":
      return `queue name too long: ${rejection.actual} bytes, limit ${rejection.limit}`;
    case "jobTypeNameTooLong":
      return `job type too long: ${rejection.actual} bytes, limit ${rejection.limit}`;
    case "idempotencyKeyTooLong":
      return `idempotency key too long: ${rejection.actual} bytes, limit ${rejection.limit}`;
    case "scheduledTooFar":
      return `scheduled too far ahead: ${rejection.actual.toISOString()} is beyond the horizon of ${rejection.horizon} ms`;
    case "invalidRequest":
      return `invalid request: ${rejection.message}`;
    case "queueFull":
      return `queue ${JSON.stringify(rejection.queue)} is full (limit ${rejection.limit} jobs)`;
    case "queueClosing":
      return `queue ${JSON.stringify(rejection.queue)} is closing`;
    case "unknown":
      return "rejected for a reason this client version does not know";
  }
}

// src/errors.ts
var SeppError = class extends Error {
  name = "SeppError";
};
var ValidationError = class extends SeppError {
  name = "ValidationError";
};
var ClientError = class extends SeppError {
  name = "ClientError";
  /** The gRPC status code, when the failure came from one. */
  code;
  /** The status message as the server (or grpc-js) gave it. */
  details;
  constructor(message, options = {}) {
    super(message, options.cause === void 0 ? void 0 : { cause: options.cause });
    this.code = options.code;
    this.details = options.details ?? message;
  }
};
var ConnectError = class extends ClientError {
  constructor(addr, reason) {
    super(`could not connect to ${addr}: ${reason}`);
    this.addr = addr;
    this.reason = reason;
  }
  addr;
  reason;
  name = "ConnectError";
};
var InvalidApiKeyError = class extends ClientError {
  name = "InvalidApiKeyError";
  constructor() {
    super("the API key is not a valid header value (it must be non-empty printable ASCII)");
  }
};
var TransportError = class extends ClientError {
  name = "TransportError";
};
var UnauthenticatedError = class extends ClientError {
  name = "UnauthenticatedError";
};
var OverloadedError = class extends ClientError {
  name = "OverloadedError";
};
var InvalidRequestError = class extends ClientError {
  name = "InvalidRequestError";
};
var ServerInternalError = class extends ClientError {
  name = "ServerInternalError";
};
var UnexpectedStatusError = class extends ClientError {
  name = "UnexpectedStatusError";
};
var EmptyBatchError = class extends ClientError {
  name = "EmptyBatchError";
  constructor() {
    super("an enqueue batch needs at least one job");
  }
};
var BatchResultCountMismatchError = class extends ClientError {
  constructor(expected, got) {
    super(`batch result count mismatch: sent ${expected} jobs, got ${got} results`);
    this.expected = expected;
    this.got = got;
  }
  expected;
  got;
  name = "BatchResultCountMismatchError";
};
var MalformedResponseError = class extends ClientError {
  name = "MalformedResponseError";
};
var JobRejectedError = class extends SeppError {
  constructor(rejection) {
    super(`job rejected: ${describeJobRejection(rejection)}`);
    this.rejection = rejection;
  }
  rejection;
  name = "JobRejectedError";
};
var BatchValidationError = class extends SeppError {
  constructor(errors) {
    const list = errors.map((error) => `job ${error.index}: ${describeJobRejection(error.rejection)}`);
    super(`atomic batch rejected (${list.join("; ")})`);
    this.errors = errors;
  }
  errors;
  name = "BatchValidationError";
};
var LeaseError = class extends SeppError {
  name = "LeaseError";
};
var JobNotFoundError = class extends LeaseError {
  name = "JobNotFoundError";
  constructor(details = "") {
    super(`job not found (already settled, or its lease expired)${details ? `: ${details}` : ""}`);
  }
};
var JobCancelledError = class extends JobNotFoundError {
  name = "JobCancelledError";
  constructor(details = "") {
    super(details);
    this.message = `job cancelled (it is dead-lettered and never delivered again)${details ? `: ${details}` : ""}`;
  }
};
var AttemptMismatchError = class extends LeaseError {
  name = "AttemptMismatchError";
  constructor(details = "") {
    super(`attempt mismatch (the job was redelivered to another attempt)${details ? `: ${details}` : ""}`);
  }
};
var LeaseLostError = class extends LeaseError {
  name = "LeaseLostError";
};
var UnknownQueuesError = class extends SeppError {
  name = "UnknownQueuesError";
};
var JobDeadLetteredError = class extends SeppError {
  name = "JobDeadLetteredError";
};
var ScheduleLimitError = class extends SeppError {
  name = "ScheduleLimitError";
};
var CANCELLED_TRAILER = "sepp-cancelled";
function isCancelled(status2) {
  const metadata = status2.metadata;
  if (metadata === void 0 || metadata === null || typeof metadata.get !== "function") return false;
  let values;
  try {
    values = metadata.get(CANCELLED_TRAILER);
  } catch {
    return false;
  }
  return values.some((value) => String(value).trim().toLowerCase() === "true");
}
function errorFromStatus(status2) {
  const { code, details } = status2;
  const options = { code, details };
  const label = Status[code] ?? String(code);
  switch (code) {
    case Status.UNAVAILABLE:
    case Status.DEADLINE_EXCEEDED:
    case Status.ABORTED:
    case Status.CANCELLED:
      return new TransportError(`transport error (${label}): ${details}`, options);
    case Status.UNAUTHENTICATED:
    case Status.PERMISSION_DENIED:
      return new UnauthenticatedError(`unauthenticated (${label}): ${details}`, options);
    case Status.RESOURCE_EXHAUSTED:
      return new OverloadedError(`server overloaded (${label}): ${details}`, options);
    case Status.INVALID_ARGUMENT:
      return new InvalidRequestError(`invalid request: ${details}`, options);
    case Status.INTERNAL:
    case Status.DATA_LOSS:
    case Status.UNKNOWN:
      return new ServerInternalError(`server internal error (${label}): ${details}`, options);
    default:
      return new UnexpectedStatusError(`unexpected status ${label}: ${details}`, options);
  }
}
function leaseErrorFromStatus(status2) {
  if (status2.code === Status.NOT_FOUND)
    return isCancelled(status2) ? new JobCancelledError(status2.details) : new JobNotFoundError(status2.details);
  if (status2.code === Status.FAILED_PRECONDITION) return new AttemptMismatchError(status2.details);
  return errorFromStatus(status2);
}
function cancelErrorFromStatus(status2) {
  if (status2.code === Status.NOT_FOUND) return new JobNotFoundError(status2.details);
  if (status2.code === Status.FAILED_PRECONDITION)
    return new JobDeadLetteredError(`job already dead-lettered: ${status2.details}`);
  return errorFromStatus(status2);
}
function scheduleErrorFromStatus(status2) {
  if (status2.code === Status.FAILED_PRECONDITION)
    return new ScheduleLimitError(`too many schedules: ${status2.details}`);
  return errorFromStatus(status2);
}
function reserveErrorFromStatus(status2) {
  if (status2.code === Status.FAILED_PRECONDITION)
    return new UnknownQueuesError(`unknown queues: ${status2.details}`);
  return errorFromStatus(status2);
}

// src/acks.ts
var MAX_ACKS_PER_CALL = 256;
var CANCELLED_MESSAGE = "job was cancelled";
function itemError(code, message, cancelled = false) {
  const known = typeof Status2[code] === "string" && code !== Status2.OK;
  const status2 = known ? code : Status2.UNKNOWN;
  const metadata = new Metadata();
  if (status2 === Status2.NOT_FOUND && (cancelled || message === CANCELLED_MESSAGE))
    metadata.set(CANCELLED_TRAILER, "true");
  const error = new Error(`${status2} ${Status2[status2]}: ${message}`);
  error.code = status2;
  error.details = message;
  error.metadata = metadata;
  return error;
}
var AckPipeline = class {
  #sendOne;
  #sendBatch;
  #schedule;
  #waiting = [];
  #flushScheduled = false;
  #batchSupported = true;
  constructor(sendOne, sendBatch, schedule = (flush) => setImmediate(flush)) {
    this.#sendOne = sendOne;
    this.#sendBatch = sendBatch;
    this.#schedule = schedule;
  }
  /** False once the server answered `AckBatch` UNIMPLEMENTED. */
  get batchSupported() {
    return this.#batchSupported;
  }
  /** Sends `request`'s ack. Rejects with what its own `Ack` call would have rejected with. */
  async submit(request) {
    if (!this.#batchSupported) {
      await this.#sendOne(request);
      return;
    }
    return new Promise((resolve, reject) => {
      this.#waiting.push({ request, resolve, reject });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        this.#schedule(() => this.#flush());
      }
    });
  }
  #flush() {
    this.#flushScheduled = false;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (let start = 0; start < waiting.length; start += MAX_ACKS_PER_CALL) {
      void this.#deliver(waiting.slice(start, start + MAX_ACKS_PER_CALL));
    }
  }
  async #deliver(group) {
    if (group.length === 1 || !this.#batchSupported) {
      await Promise.all(group.map((entry) => this.#deliverOne(entry)));
      return;
    }
    let response;
    try {
      response = await this.#sendBatch({ acks: group.map((entry) => entry.request) });
    } catch (error) {
      if (error?.code === Status2.UNIMPLEMENTED) {
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
      const outcome = results[index].outcome;
      if (outcome?.$case === "success") entry.resolve();
      else if (outcome?.$case === "error")
        entry.reject(itemError(outcome.value.code, outcome.value.message, outcome.value.cancelled));
      else entry.reject(new MalformedResponseError("malformed response: an ack result with no outcome"));
    });
  }
  async #deliverOne(entry) {
    try {
      await this.#sendOne(entry.request);
    } catch (error) {
      entry.reject(error);
      return;
    }
    entry.resolve();
  }
};

// src/cluster.ts
import { status as Status3 } from "@grpc/grpc-js";
var LEADER_METADATA = "sepp-leader";
var MAX_REDIRECTS = 3;
function leaderFrom(error) {
  if (error?.code !== Status3.UNAVAILABLE) return void 0;
  const metadata = error.metadata;
  if (metadata === void 0 || metadata === null || typeof metadata.get !== "function") return void 0;
  let values;
  try {
    values = metadata.get(LEADER_METADATA);
  } catch {
    return void 0;
  }
  for (const value of values) {
    const address = String(value).trim();
    if (address !== "" && !/[\s/]/.test(address)) return address;
  }
  return void 0;
}
function isLeaderless(error) {
  return error?.code === Status3.UNAVAILABLE && leaderFrom(error) === void 0;
}
var Connection = class {
  constructor(target, grpc3) {
    this.target = target;
    this.grpc = grpc3;
  }
  target;
  grpc;
  #inFlight = 0;
  /** Set once retired: called when the connection closes. */
  #onRetiredClose;
  #closed = false;
  /** Counts a call that starts on this connection; pair with {@link end}. */
  begin() {
    this.#inFlight++;
  }
  /** Counts a call that ended; a retired connection closes with its last call. */
  end() {
    this.#inFlight--;
    if (this.#onRetiredClose !== void 0 && this.#inFlight === 0) this.close();
  }
  /**
   * No new call starts here: closes now if idle, else once the last call in flight ends, and then
   * calls `onClose`.
   */
  retire(onClose) {
    this.#onRetiredClose = onClose;
    if (this.#inFlight === 0) this.close();
  }
  /** Closes the grpc-js client (once); calls still in flight on it fail. */
  close() {
    if (this.#closed) return;
    this.#closed = true;
    this.grpc.close();
    this.#onRetiredClose?.();
  }
  get closed() {
    return this.#closed;
  }
};
var Connections = class {
  constructor(seed, first, dial, logger) {
    this.seed = seed;
    this.dial = dial;
    this.logger = logger;
    this.#current = new Connection(seed, first);
  }
  seed;
  dial;
  logger;
  #current;
  /** Connections switched away from that still have calls in flight. */
  #retired = /* @__PURE__ */ new Set();
  #closed = false;
  /**
   * Whether the client knows it talks to a cluster (a node named the leader, or `getServerInfo`
   * answered with `cluster`): its calls then ride a failover (see `retry.ts`).
   */
  #inCluster = false;
  /** The members' client addresses, sorted, from the last `getServerInfo` that listed them. */
  #members = [];
  /** The connection a call starts on. */
  get current() {
    return this.#current;
  }
  /**
   * After `from` answered that the leader is at `leader`: makes the leader's connection current,
   * unless another call switched away from `from` already (then the current one stands). False when
   * the address cannot be dialed: the call then fails as it did.
   */
  follow(from, leader, operation) {
    if (this.#closed || from !== this.#current || leader === from.target) return true;
    if (!this.#switchTo(leader, operation)) return false;
    this.logger.info?.(`following the cluster leader to ${leader}`, {
      operation,
      from: from.target,
      leader,
      seed: this.seed
    });
    return true;
  }
  /** Whether the client knows it talks to a cluster. */
  get inCluster() {
    return this.#inCluster;
  }
  /** Records that the client talks to a cluster, and its members' client addresses (an empty list keeps those known). */
  learnedCluster(members) {
    this.#inCluster = true;
    const known = [...new Set(members.filter((member) => member !== ""))].sort();
    if (known.length > 0) this.#members = known;
  }
  /**
   * After `from` failed UNAVAILABLE naming no leader (it is down, or lost its leadership): the next
   * attempt asks another node who leads now. That is the seed after a leader this client followed,
   * or, once the members are known (from `getServerInfo`), the next member, so that a client given
   * the leader's own address reaches the others when that leader dies.
   */
  lost(from, operation) {
    if (this.#closed || from !== this.#current) return;
    const target = this.#nextAfter(from.target);
    if (target === void 0 || !this.#switchTo(target, operation)) return;
    this.logger.info?.(`the cluster node ${from.target} is unavailable; asking ${target} who leads`, {
      operation,
      from: from.target,
      to: target,
      seed: this.seed
    });
  }
  #nextAfter(target) {
    if (this.#members.length === 0) return target === this.seed ? void 0 : this.seed;
    const next = this.#members[(this.#members.indexOf(target) + 1) % this.#members.length];
    return next === target ? void 0 : next;
  }
  /** Closes every connection; calls in flight fail. */
  close() {
    this.#closed = true;
    this.#current.close();
    for (const connection of [...this.#retired]) connection.close();
  }
  /** Makes a new connection to `target` current and retires the old one; false if grpc-js refuses the address. */
  #switchTo(target, operation) {
    let client;
    try {
      client = this.dial(target);
    } catch (error) {
      this.logger.warn(`cannot dial the cluster leader's address ${target}`, {
        operation,
        error: String(error)
      });
      return false;
    }
    const old = this.#current;
    this.#current = new Connection(target, client);
    this.#retired.add(old);
    old.retire(() => this.#retired.delete(old));
    return true;
  }
  /** How many connections are open: the current one and those still finishing calls. */
  get open() {
    return this.#retired.size + (this.#current.closed ? 0 : 1);
  }
};

// src/connect.ts
import { X509Certificate } from "crypto";
import { createSecureContext } from "tls";
import * as grpc from "@grpc/grpc-js";

// src/version.ts
var VERSION = "0.2.0";
var USER_AGENT = `sepp-js/${VERSION}`;

// src/connect.ts
var KEEPALIVE_TIME_MS = 3e4;
var KEEPALIVE_TIMEOUT_MS = 1e4;
var DEFAULT_CONNECT_TIMEOUT_MS = 5e3;
var DEFAULT_RPC_TIMEOUT_MS = 3e4;
function parseAddress(addr, tlsRequested) {
  if (typeof addr !== "string") throw new ConnectError(String(addr), "the address must be a string");
  let rest = addr.trim();
  let schemeTls = false;
  const lower = rest.toLowerCase();
  if (lower.startsWith("https://")) {
    rest = rest.slice("https://".length);
    schemeTls = true;
  } else if (lower.startsWith("http://")) {
    rest = rest.slice("http://".length);
  }
  rest = rest.replace(/\/+$/, "");
  if (rest === "") throw new ConnectError(addr, "the address is empty");
  if (rest.includes("://")) throw new ConnectError(addr, "only http:// and https:// addresses are supported");
  if (rest.includes("/")) throw new ConnectError(addr, "the address must be host:port, without a path");
  return { target: rest, tls: schemeTls || tlsRequested };
}
function authorizationHeader(apiKey) {
  if (typeof apiKey !== "string" || !/^[\x20-\x7e]+$/.test(apiKey) || apiKey.trim() === "") {
    throw new InvalidApiKeyError();
  }
  return `Bearer ${apiKey}`;
}
function channelOptions(options) {
  const channel = {
    "grpc.keepalive_time_ms": KEEPALIVE_TIME_MS,
    "grpc.keepalive_timeout_ms": KEEPALIVE_TIMEOUT_MS,
    "grpc.keepalive_permit_without_calls": 1,
    "grpc.primary_user_agent": USER_AGENT,
    // The server publishes no service config; skip the DNS TXT lookup for one.
    "grpc.service_config_disable_resolution": 1
  };
  if (options.maxReceiveMessageBytes !== void 0) {
    const limit = options.maxReceiveMessageBytes;
    if (!Number.isInteger(limit) || limit < 1) {
      throw new ValidationError(`maxReceiveMessageBytes must be a positive integer (got ${String(limit)})`);
    }
    channel["grpc.max_receive_message_length"] = limit;
  }
  if (options.tlsDomain !== void 0) {
    channel["grpc.ssl_target_name_override"] = options.tlsDomain;
    channel["grpc.default_authority"] = options.tlsDomain;
  }
  return channel;
}
function credentials2(tls, options) {
  if (!tls) return grpc.credentials.createInsecure();
  const ca = options.tlsCaCert === void 0 ? void 0 : Buffer.from(options.tlsCaCert);
  if (ca !== void 0) new X509Certificate(ca);
  const context = ca === void 0 ? createSecureContext() : createSecureContext({ ca });
  return grpc.credentials.createFromSecureContext(context);
}
async function connectChannel(client, addr, timeoutMs) {
  const channel = client.getChannel();
  const deadline = Date.now() + timeoutMs;
  for (; ; ) {
    const state = channel.getConnectivityState(true);
    if (state === grpc.connectivityState.READY) return;
    if (state === grpc.connectivityState.TRANSIENT_FAILURE || state === grpc.connectivityState.SHUTDOWN) {
      throw new ConnectError(addr, await failureReason(client));
    }
    const changed = await new Promise(
      (resolve) => channel.watchConnectivityState(state, deadline, (error) => resolve(error === void 0))
    );
    if (!changed) throw new ConnectError(addr, `no connection within ${timeoutMs} ms`);
  }
}
function failureReason(client) {
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      (value) => value,
      (value) => value,
      Buffer.alloc(0),
      new grpc.Metadata(),
      { deadline: Date.now() + 1e3 },
      (error) => {
        const details = error?.details ?? "the channel failed";
        const reason = details.replace(/^No connection established\. Last error: /, "").replace(/^Error: /, "").replace(/\.? Resolution note: $/, "");
        resolve(reason);
      }
    );
  });
}

// src/consume.ts
import { Metadata as Metadata3, status as Status4 } from "@grpc/grpc-js";
var NotSentError = class extends Error {
  name = "NotSentError";
};
var ConsumeSession = class {
  #call;
  #events;
  #maxCredits;
  #maxSettles;
  /** False once half-closed or ended: settles then go on calls of their own. */
  #writable = true;
  #flushScheduled = false;
  /** Credits to grant with the next message. */
  #owed = 0;
  /** Credits granted and not yet used by a pushed job. */
  #outstanding = 0;
  #waiting = [];
  #sent = /* @__PURE__ */ new Map();
  #nextId = 1n;
  #received = false;
  #status;
  /** Resolves once the stream has ended, with how. */
  ended;
  constructor(call, open, credits, limits, events) {
    this.#call = call;
    this.#events = events;
    this.#maxCredits = Math.max(1, limits.maxCredits);
    this.#maxSettles = Math.max(1, limits.maxSettles);
    const first = Math.min(credits, this.#maxCredits);
    this.#owed = credits - first;
    this.#outstanding = first;
    this.ended = new Promise((resolve) => {
      call.on("data", (response) => this.#receive(response));
      call.on("error", () => {
      });
      call.on("status", (status2) => {
        this.#status = { code: status2.code, details: status2.details, metadata: status2.metadata };
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
  grant(count) {
    if (!this.#writable || count <= 0) return;
    this.#owed += count;
    this.#scheduleFlush();
  }
  settle(op) {
    if (!this.#writable) return void 0;
    return new Promise((resolve, reject) => {
      const settle2 = { id: this.#nextId++, op };
      this.#waiting.push({ settle: settle2, resolve, reject });
      this.#scheduleFlush();
    });
  }
  /**
   * Sends what waits, then half-closes: the server answers the settles it has and ends the stream.
   * Settles from now on go on calls of their own.
   */
  halfClose() {
    if (!this.#writable) return;
    this.#owed = 0;
    this.#flush();
    this.#writable = false;
    this.#call.end();
  }
  /** Ends the stream at once (CANCELLED); settles not answered reject. */
  cancel() {
    this.#call.cancel();
  }
  #scheduleFlush() {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      this.#flush();
    });
  }
  #flush() {
    if (!this.#writable) return;
    for (; ; ) {
      const credits = Math.max(0, Math.min(this.#owed, this.#maxCredits - this.#outstanding));
      if (credits <= 0 && this.#waiting.length === 0) return;
      const group = this.#waiting.splice(0, this.#maxSettles);
      for (const pending of group) this.#sent.set(pending.settle.id, pending);
      this.#owed -= credits;
      this.#outstanding += credits;
      this.#call.write({ credits, settles: group.map((pending) => pending.settle) });
    }
  }
  #receive(response) {
    this.#received = true;
    if (response.jobs.length > 0) {
      this.#outstanding = Math.max(0, this.#outstanding - response.jobs.length);
      if (this.#owed > 0) this.#scheduleFlush();
      this.#events.jobs(response.jobs);
    }
    for (const result of response.results) {
      const pending = this.#sent.get(result.id);
      if (pending === void 0) continue;
      this.#sent.delete(result.id);
      const outcome = result.outcome;
      if (outcome === void 0) {
        pending.reject(itemError(Status4.INTERNAL, "malformed response: a settle result with no outcome"));
      } else if (outcome.$case === "error") {
        pending.reject(itemError(outcome.value.code, outcome.value.message, outcome.value.cancelled));
      } else {
        pending.resolve(outcome);
      }
    }
    if (response.cancelled.length > 0) this.#events.cancelled(response.cancelled);
  }
  #finish() {
    this.#writable = false;
    const status2 = this.#status ?? {
      code: Status4.UNKNOWN,
      details: "the stream ended without a status",
      metadata: new Metadata3()
    };
    for (const pending of this.#waiting.splice(0)) pending.reject(new NotSentError("the stream has ended"));
    const cutOff = status2.code === Status4.OK ? { code: Status4.UNKNOWN, details: "the stream ended without answering", metadata: new Metadata3() } : status2;
    for (const pending of this.#sent.values()) pending.reject(statusError(cutOff));
    this.#sent.clear();
    return { status: status2, received: this.#received };
  }
};
function statusError(status2) {
  const label = Status4[status2.code] ?? String(status2.code);
  return Object.assign(new Error(`${status2.code} ${label}: ${status2.details}`), {
    code: status2.code,
    details: status2.details,
    metadata: status2.metadata
  });
}

// src/gen/sepp/v1/queue.ts
import { BinaryReader as BinaryReader4, BinaryWriter as BinaryWriter4 } from "@bufbuild/protobuf/wire";
import {
  makeGenericClientConstructor
} from "@grpc/grpc-js";

// src/gen/google/protobuf/duration.ts
import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";
function createBaseDuration() {
  return { seconds: 0n, nanos: 0 };
}
var Duration = {
  encode(message, writer = new BinaryWriter()) {
    if (message.seconds !== 0n) {
      if (BigInt.asIntN(64, message.seconds) !== message.seconds) {
        throw new globalThis.Error("value provided for field message.seconds of type int64 too large");
      }
      writer.uint32(8).int64(message.seconds);
    }
    if (message.nanos !== 0) {
      writer.uint32(16).int32(message.nanos);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader ? input : new BinaryReader(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseDuration();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.seconds = reader.int64();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.nanos = reader.int32();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};

// src/gen/google/protobuf/empty.ts
import { BinaryReader as BinaryReader2, BinaryWriter as BinaryWriter2 } from "@bufbuild/protobuf/wire";
function createBaseEmpty() {
  return {};
}
var Empty = {
  encode(_, writer = new BinaryWriter2()) {
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader2 ? input : new BinaryReader2(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseEmpty();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};

// src/gen/google/protobuf/timestamp.ts
import { BinaryReader as BinaryReader3, BinaryWriter as BinaryWriter3 } from "@bufbuild/protobuf/wire";
function createBaseTimestamp() {
  return { seconds: 0n, nanos: 0 };
}
var Timestamp = {
  encode(message, writer = new BinaryWriter3()) {
    if (message.seconds !== 0n) {
      if (BigInt.asIntN(64, message.seconds) !== message.seconds) {
        throw new globalThis.Error("value provided for field message.seconds of type int64 too large");
      }
      writer.uint32(8).int64(message.seconds);
    }
    if (message.nanos !== 0) {
      writer.uint32(16).int32(message.nanos);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader3 ? input : new BinaryReader3(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseTimestamp();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.seconds = reader.int64();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.nanos = reader.int32();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};

// src/gen/sepp/v1/queue.ts
function createBasePrimitiveValue() {
  return { value: void 0 };
}
var PrimitiveValue = {
  encode(message, writer = new BinaryWriter4()) {
    switch (message.value?.$case) {
      case "stringValue":
        writer.uint32(10).string(message.value.value);
        break;
      case "doubleValue":
        writer.uint32(17).double(message.value.value);
        break;
      case "intValue":
        if (BigInt.asIntN(64, message.value.value) !== message.value.value) {
          throw new globalThis.Error("value provided for field message.value.value of type int64 too large");
        }
        writer.uint32(24).int64(message.value.value);
        break;
      case "boolValue":
        writer.uint32(32).bool(message.value.value);
        break;
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBasePrimitiveValue();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.value = { $case: "stringValue", value: reader.string() };
            continue;
          }
          case 2: {
            if (tag !== 17) {
              break;
            }
            message.value = { $case: "doubleValue", value: reader.double() };
            continue;
          }
          case 3: {
            if (tag !== 24) {
              break;
            }
            message.value = { $case: "intValue", value: reader.int64() };
            continue;
          }
          case 4: {
            if (tag !== 32) {
              break;
            }
            message.value = { $case: "boolValue", value: reader.bool() };
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseTraceContext() {
  return { traceparent: "", tracestate: void 0 };
}
var TraceContext = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.traceparent !== "") {
      writer.uint32(10).string(message.traceparent);
    }
    if (message.tracestate !== void 0) {
      writer.uint32(18).string(message.tracestate);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseTraceContext();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.traceparent = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.tracestate = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBasePayload() {
  return { data: Buffer.alloc(0), encoding: "" };
}
var Payload = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.data.length !== 0) {
      writer.uint32(10).bytes(message.data);
    }
    if (message.encoding !== "") {
      writer.uint32(18).string(message.encoding);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBasePayload();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.data = Buffer.from(reader.bytes());
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.encoding = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseJob() {
  return {
    id: "",
    jobType: "",
    payload: void 0,
    priority: 0,
    traceContext: void 0,
    enqueuedAt: void 0,
    attempt: 0,
    maxAttempts: 0,
    leaseExpiresAt: void 0,
    custom: {},
    scheduledAt: void 0,
    queue: ""
  };
}
var Job = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.id !== "") {
      writer.uint32(10).string(message.id);
    }
    if (message.jobType !== "") {
      writer.uint32(18).string(message.jobType);
    }
    if (message.payload !== void 0) {
      Payload.encode(message.payload, writer.uint32(26).fork()).join();
    }
    if (message.priority !== 0) {
      writer.uint32(32).uint32(message.priority);
    }
    if (message.traceContext !== void 0) {
      TraceContext.encode(message.traceContext, writer.uint32(42).fork()).join();
    }
    if (message.enqueuedAt !== void 0) {
      Timestamp.encode(message.enqueuedAt, writer.uint32(50).fork()).join();
    }
    if (message.attempt !== 0) {
      writer.uint32(56).uint32(message.attempt);
    }
    if (message.maxAttempts !== 0) {
      writer.uint32(64).uint32(message.maxAttempts);
    }
    if (message.leaseExpiresAt !== void 0) {
      Timestamp.encode(message.leaseExpiresAt, writer.uint32(74).fork()).join();
    }
    globalThis.Object.entries(message.custom).forEach(([key, value]) => {
      Job_CustomEntry.encode({ key, value }, writer.uint32(82).fork()).join();
    });
    if (message.scheduledAt !== void 0) {
      Timestamp.encode(message.scheduledAt, writer.uint32(90).fork()).join();
    }
    if (message.queue !== "") {
      writer.uint32(98).string(message.queue);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseJob();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.id = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.jobType = reader.string();
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.payload = Payload.decode(reader, reader.uint32());
            continue;
          }
          case 4: {
            if (tag !== 32) {
              break;
            }
            message.priority = reader.uint32();
            continue;
          }
          case 5: {
            if (tag !== 42) {
              break;
            }
            message.traceContext = TraceContext.decode(reader, reader.uint32());
            continue;
          }
          case 6: {
            if (tag !== 50) {
              break;
            }
            message.enqueuedAt = Timestamp.decode(reader, reader.uint32());
            continue;
          }
          case 7: {
            if (tag !== 56) {
              break;
            }
            message.attempt = reader.uint32();
            continue;
          }
          case 8: {
            if (tag !== 64) {
              break;
            }
            message.maxAttempts = reader.uint32();
            continue;
          }
          case 9: {
            if (tag !== 74) {
              break;
            }
            message.leaseExpiresAt = Timestamp.decode(reader, reader.uint32());
            continue;
          }
          case 10: {
            if (tag !== 82) {
              break;
            }
            const entry10 = Job_CustomEntry.decode(reader, reader.uint32());
            if (entry10.value !== void 0) {
              message.custom[entry10.key] = entry10.value;
            }
            continue;
          }
          case 11: {
            if (tag !== 90) {
              break;
            }
            message.scheduledAt = Timestamp.decode(reader, reader.uint32());
            continue;
          }
          case 12: {
            if (tag !== 98) {
              break;
            }
            message.queue = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseJob_CustomEntry() {
  return { key: "", value: void 0 };
}
var Job_CustomEntry = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.key !== "") {
      writer.uint32(10).string(message.key);
    }
    if (message.value !== void 0) {
      PrimitiveValue.encode(message.value, writer.uint32(18).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseJob_CustomEntry();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.key = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.value = PrimitiveValue.decode(reader, reader.uint32());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseEnqueueRequest() {
  return {
    queue: "",
    jobType: "",
    payload: void 0,
    idempotencyKey: void 0,
    priority: void 0,
    maxAttempts: void 0,
    traceContext: void 0,
    custom: {},
    scheduledAt: void 0
  };
}
var EnqueueRequest = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.queue !== "") {
      writer.uint32(10).string(message.queue);
    }
    if (message.jobType !== "") {
      writer.uint32(18).string(message.jobType);
    }
    if (message.payload !== void 0) {
      Payload.encode(message.payload, writer.uint32(26).fork()).join();
    }
    if (message.idempotencyKey !== void 0) {
      writer.uint32(34).string(message.idempotencyKey);
    }
    if (message.priority !== void 0) {
      writer.uint32(40).uint32(message.priority);
    }
    if (message.maxAttempts !== void 0) {
      writer.uint32(48).uint32(message.maxAttempts);
    }
    if (message.traceContext !== void 0) {
      TraceContext.encode(message.traceContext, writer.uint32(58).fork()).join();
    }
    globalThis.Object.entries(message.custom).forEach(([key, value]) => {
      EnqueueRequest_CustomEntry.encode({ key, value }, writer.uint32(66).fork()).join();
    });
    if (message.scheduledAt !== void 0) {
      Timestamp.encode(message.scheduledAt, writer.uint32(74).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseEnqueueRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.queue = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.jobType = reader.string();
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.payload = Payload.decode(reader, reader.uint32());
            continue;
          }
          case 4: {
            if (tag !== 34) {
              break;
            }
            message.idempotencyKey = reader.string();
            continue;
          }
          case 5: {
            if (tag !== 40) {
              break;
            }
            message.priority = reader.uint32();
            continue;
          }
          case 6: {
            if (tag !== 48) {
              break;
            }
            message.maxAttempts = reader.uint32();
            continue;
          }
          case 7: {
            if (tag !== 58) {
              break;
            }
            message.traceContext = TraceContext.decode(reader, reader.uint32());
            continue;
          }
          case 8: {
            if (tag !== 66) {
              break;
            }
            const entry8 = EnqueueRequest_CustomEntry.decode(reader, reader.uint32());
            if (entry8.value !== void 0) {
              message.custom[entry8.key] = entry8.value;
            }
            continue;
          }
          case 9: {
            if (tag !== 74) {
              break;
            }
            message.scheduledAt = Timestamp.decode(reader, reader.uint32());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseEnqueueRequest_CustomEntry() {
  return { key: "", value: void 0 };
}
var EnqueueRequest_CustomEntry = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.key !== "") {
      writer.uint32(10).string(message.key);
    }
    if (message.value !== void 0) {
      PrimitiveValue.encode(message.value, writer.uint32(18).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseEnqueueRequest_CustomEntry();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.key = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.value = PrimitiveValue.decode(reader, reader.uint32());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseEnqueueResponse() {
  return { jobId: "", deduplicated: false };
}
var EnqueueResponse = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.jobId !== "") {
      writer.uint32(10).string(message.jobId);
    }
    if (message.deduplicated !== false) {
      writer.uint32(16).bool(message.deduplicated);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseEnqueueResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobId = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.deduplicated = reader.bool();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseEnqueueBatchRequest() {
  return { jobs: [] };
}
var EnqueueBatchRequest = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.jobs) {
      EnqueueRequest.encode(v, writer.uint32(10).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseEnqueueBatchRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobs.push(EnqueueRequest.decode(reader, reader.uint32()));
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseEnqueueBatchResponse() {
  return { results: [] };
}
var EnqueueBatchResponse = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.results) {
      JobResult.encode(v, writer.uint32(10).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseEnqueueBatchResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.results.push(JobResult.decode(reader, reader.uint32()));
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseJobResult() {
  return { outcome: void 0 };
}
var JobResult = {
  encode(message, writer = new BinaryWriter4()) {
    switch (message.outcome?.$case) {
      case "success":
        EnqueueResponse.encode(message.outcome.value, writer.uint32(10).fork()).join();
        break;
      case "rejection":
        JobRejection.encode(message.outcome.value, writer.uint32(18).fork()).join();
        break;
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseJobResult();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.outcome = { $case: "success", value: EnqueueResponse.decode(reader, reader.uint32()) };
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.outcome = { $case: "rejection", value: JobRejection.decode(reader, reader.uint32()) };
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseEnqueueAtomicResponse() {
  return { outcome: void 0 };
}
var EnqueueAtomicResponse = {
  encode(message, writer = new BinaryWriter4()) {
    switch (message.outcome?.$case) {
      case "success":
        EnqueueAtomicSuccess.encode(message.outcome.value, writer.uint32(10).fork()).join();
        break;
      case "rejection":
        BatchValidationFailure.encode(message.outcome.value, writer.uint32(18).fork()).join();
        break;
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseEnqueueAtomicResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.outcome = { $case: "success", value: EnqueueAtomicSuccess.decode(reader, reader.uint32()) };
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.outcome = { $case: "rejection", value: BatchValidationFailure.decode(reader, reader.uint32()) };
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseEnqueueAtomicSuccess() {
  return { responses: [] };
}
var EnqueueAtomicSuccess = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.responses) {
      EnqueueResponse.encode(v, writer.uint32(10).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseEnqueueAtomicSuccess();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.responses.push(EnqueueResponse.decode(reader, reader.uint32()));
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseBatchValidationFailure() {
  return { errors: [] };
}
var BatchValidationFailure = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.errors) {
      JobValidationError.encode(v, writer.uint32(10).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseBatchValidationFailure();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.errors.push(JobValidationError.decode(reader, reader.uint32()));
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseJobValidationError() {
  return { index: 0, rejection: void 0 };
}
var JobValidationError = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.index !== 0) {
      writer.uint32(8).uint32(message.index);
    }
    if (message.rejection !== void 0) {
      JobRejection.encode(message.rejection, writer.uint32(18).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseJobValidationError();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.index = reader.uint32();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.rejection = JobRejection.decode(reader, reader.uint32());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseJobRejection() {
  return { reason: void 0 };
}
var JobRejection = {
  encode(message, writer = new BinaryWriter4()) {
    switch (message.reason?.$case) {
      case "unknownQueue":
        UnknownQueue.encode(message.reason.value, writer.uint32(10).fork()).join();
        break;
      case "payloadTooLarge":
        PayloadTooLarge.encode(message.reason.value, writer.uint32(18).fork()).join();
        break;
      case "encodingNotAllowed":
        EncodingNotAllowed.encode(message.reason.value, writer.uint32(26).fork()).join();
        break;
      case "jobTypeNotAllowed":
        JobTypeNotAllowed.encode(message.reason.value, writer.uint32(34).fork()).join();
        break;
      case "customEntriesTooMany":
        CustomEntriesTooMany.encode(message.reason.value, writer.uint32(42).fork()).join();
        break;
      case "customMapTooLarge":
        CustomMapTooLarge.encode(message.reason.value, writer.uint32(50).fork()).join();
        break;
      case "customKeyTooLong":
        CustomKeyTooLong.encode(message.reason.value, writer.uint32(58).fork()).join();
        break;
      case "queueNameTooLong":
        QueueNameTooLong.encode(message.reason.value, writer.uint32(66).fork()).join();
        break;
      case "jobTypeNameTooLong":
        JobTypeNameTooLong.encode(message.reason.value, writer.uint32(74).fork()).join();
        break;
      case "idempotencyKeyTooLong":
        IdempotencyKeyTooLong.encode(message.reason.value, writer.uint32(82).fork()).join();
        break;
      case "scheduledTooFar":
        ScheduledTooFar.encode(message.reason.value, writer.uint32(90).fork()).join();
        break;
      case "invalidRequest":
        InvalidRequest.encode(message.reason.value, writer.uint32(98).fork()).join();
        break;
      case "queueFull":
        QueueFull.encode(message.reason.value, writer.uint32(106).fork()).join();
        break;
      case "queueClosing":
        QueueClosing.encode(message.reason.value, writer.uint32(114).fork()).join();
        break;
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseJobRejection();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.reason = { $case: "unknownQueue", value: UnknownQueue.decode(reader, reader.uint32()) };
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.reason = { $case: "payloadTooLarge", value: PayloadTooLarge.decode(reader, reader.uint32()) };
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.reason = { $case: "encodingNotAllowed", value: EncodingNotAllowed.decode(reader, reader.uint32()) };
            continue;
          }
          case 4: {
            if (tag !== 34) {
              break;
            }
            message.reason = { $case: "jobTypeNotAllowed", value: JobTypeNotAllowed.decode(reader, reader.uint32()) };
            continue;
          }
          case 5: {
            if (tag !== 42) {
              break;
            }
            message.reason = {
              $case: "customEntriesTooMany",
              value: CustomEntriesTooMany.decode(reader, reader.uint32())
            };
            continue;
          }
          case 6: {
            if (tag !== 50) {
              break;
            }
            message.reason = { $case: "customMapTooLarge", value: CustomMapTooLarge.decode(reader, reader.uint32()) };
            continue;
          }
          case 7: {
            if (tag !== 58) {
              break;
            }
            message.reason = { $case: "customKeyTooLong", value: CustomKeyTooLong.decode(reader, reader.uint32()) };
            continue;
          }
          case 8: {
            if (tag !== 66) {
              break;
            }
            message.reason = { $case: "queueNameTooLong", value: QueueNameTooLong.decode(reader, reader.uint32()) };
            continue;
          }
          case 9: {
            if (tag !== 74) {
              break;
            }
            message.reason = { $case: "jobTypeNameTooLong", value: JobTypeNameTooLong.decode(reader, reader.uint32()) };
            continue;
          }
          case 10: {
            if (tag !== 82) {
              break;
            }
            message.reason = {
              $case: "idempotencyKeyTooLong",
              value: IdempotencyKeyTooLong.decode(reader, reader.uint32())
            };
            continue;
          }
          case 11: {
            if (tag !== 90) {
              break;
            }
            message.reason = { $case: "scheduledTooFar", value: ScheduledTooFar.decode(reader, reader.uint32()) };
            continue;
          }
          case 12: {
            if (tag !== 98) {
              break;
            }
            message.reason = { $case: "invalidRequest", value: InvalidRequest.decode(reader, reader.uint32()) };
            continue;
          }
          case 13: {
            if (tag !== 106) {
              break;
            }
            message.reason = { $case: "queueFull", value: QueueFull.decode(reader, reader.uint32()) };
            continue;
          }
          case 14: {
            if (tag !== 114) {
              break;
            }
            message.reason = { $case: "queueClosing", value: QueueClosing.decode(reader, reader.uint32()) };
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseUnknownQueue() {
  return { queue: "" };
}
var UnknownQueue = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.queue !== "") {
      writer.uint32(10).string(message.queue);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseUnknownQueue();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.queue = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBasePayloadTooLarge() {
  return { limit: 0n, actual: 0n };
}
var PayloadTooLarge = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.limit !== 0n) {
      if (BigInt.asUintN(64, message.limit) !== message.limit) {
        throw new globalThis.Error("value provided for field message.limit of type uint64 too large");
      }
      writer.uint32(8).uint64(message.limit);
    }
    if (message.actual !== 0n) {
      if (BigInt.asUintN(64, message.actual) !== message.actual) {
        throw new globalThis.Error("value provided for field message.actual of type uint64 too large");
      }
      writer.uint32(16).uint64(message.actual);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBasePayloadTooLarge();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.limit = reader.uint64();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.actual = reader.uint64();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseEncodingNotAllowed() {
  return { encoding: "", allowed: [] };
}
var EncodingNotAllowed = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.encoding !== "") {
      writer.uint32(10).string(message.encoding);
    }
    for (const v of message.allowed) {
      writer.uint32(18).string(v);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseEncodingNotAllowed();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.encoding = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.allowed.push(reader.string());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseJobTypeNotAllowed() {
  return { jobType: "", allowed: [] };
}
var JobTypeNotAllowed = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.jobType !== "") {
      writer.uint32(10).string(message.jobType);
    }
    for (const v of message.allowed) {
      writer.uint32(18).string(v);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseJobTypeNotAllowed();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobType = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.allowed.push(reader.string());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseCustomEntriesTooMany() {
  return { limit: 0, actual: 0 };
}
var CustomEntriesTooMany = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.limit !== 0) {
      writer.uint32(8).uint32(message.limit);
    }
    if (message.actual !== 0) {
      writer.uint32(16).uint32(message.actual);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseCustomEntriesTooMany();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.limit = reader.uint32();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.actual = reader.uint32();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseCustomMapTooLarge() {
  return { limit: 0n, actual: 0n };
}
var CustomMapTooLarge = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.limit !== 0n) {
      if (BigInt.asUintN(64, message.limit) !== message.limit) {
        throw new globalThis.Error("value provided for field message.limit of type uint64 too large");
      }
      writer.uint32(8).uint64(message.limit);
    }
    if (message.actual !== 0n) {
      if (BigInt.asUintN(64, message.actual) !== message.actual) {
        throw new globalThis.Error("value provided for field message.actual of type uint64 too large");
      }
      writer.uint32(16).uint64(message.actual);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseCustomMapTooLarge();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.limit = reader.uint64();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.actual = reader.uint64();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseCustomKeyTooLong() {
  return { key: "", limit: 0, actual: 0n };
}
var CustomKeyTooLong = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.key !== "") {
      writer.uint32(10).string(message.key);
    }
    if (message.limit !== 0) {
      writer.uint32(16).uint32(message.limit);
    }
    if (message.actual !== 0n) {
      if (BigInt.asUintN(64, message.actual) !== message.actual) {
        throw new globalThis.Error("value provided for field message.actual of type uint64 too large");
      }
      writer.uint32(24).uint64(message.actual);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseCustomKeyTooLong();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.key = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.limit = reader.uint32();
            continue;
          }
          case 3: {
            if (tag !== 24) {
              break;
            }
            message.actual = reader.uint64();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseQueueNameTooLong() {
  return { limit: 0, actual: 0n };
}
var QueueNameTooLong = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.limit !== 0) {
      writer.uint32(8).uint32(message.limit);
    }
    if (message.actual !== 0n) {
      if (BigInt.asUintN(64, message.actual) !== message.actual) {
        throw new globalThis.Error("value provided for field message.actual of type uint64 too large");
      }
      writer.uint32(16).uint64(message.actual);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseQueueNameTooLong();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.limit = reader.uint32();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.actual = reader.uint64();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseJobTypeNameTooLong() {
  return { limit: 0, actual: 0n };
}
var JobTypeNameTooLong = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.limit !== 0) {
      writer.uint32(8).uint32(message.limit);
    }
    if (message.actual !== 0n) {
      if (BigInt.asUintN(64, message.actual) !== message.actual) {
        throw new globalThis.Error("value provided for field message.actual of type uint64 too large");
      }
      writer.uint32(16).uint64(message.actual);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseJobTypeNameTooLong();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.limit = reader.uint32();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.actual = reader.uint64();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseIdempotencyKeyTooLong() {
  return { limit: 0, actual: 0n };
}
var IdempotencyKeyTooLong = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.limit !== 0) {
      writer.uint32(8).uint32(message.limit);
    }
    if (message.actual !== 0n) {
      if (BigInt.asUintN(64, message.actual) !== message.actual) {
        throw new globalThis.Error("value provided for field message.actual of type uint64 too large");
      }
      writer.uint32(16).uint64(message.actual);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseIdempotencyKeyTooLong();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.limit = reader.uint32();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.actual = reader.uint64();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseScheduledTooFar() {
  return { horizon: void 0, actual: void 0 };
}
var ScheduledTooFar = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.horizon !== void 0) {
      Duration.encode(message.horizon, writer.uint32(10).fork()).join();
    }
    if (message.actual !== void 0) {
      Timestamp.encode(message.actual, writer.uint32(18).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseScheduledTooFar();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.horizon = Duration.decode(reader, reader.uint32());
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.actual = Timestamp.decode(reader, reader.uint32());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseInvalidRequest() {
  return { message: "" };
}
var InvalidRequest = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.message !== "") {
      writer.uint32(10).string(message.message);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseInvalidRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.message = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseQueueFull() {
  return { queue: "", limit: 0n };
}
var QueueFull = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.queue !== "") {
      writer.uint32(10).string(message.queue);
    }
    if (message.limit !== 0n) {
      if (BigInt.asUintN(64, message.limit) !== message.limit) {
        throw new globalThis.Error("value provided for field message.limit of type uint64 too large");
      }
      writer.uint32(16).uint64(message.limit);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseQueueFull();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.queue = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.limit = reader.uint64();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseQueueClosing() {
  return { queue: "" };
}
var QueueClosing = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.queue !== "") {
      writer.uint32(10).string(message.queue);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseQueueClosing();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.queue = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseReserveRequest() {
  return { queues: [], waitTimeout: void 0, leaseDuration: void 0, workerId: void 0, maxJobs: void 0 };
}
var ReserveRequest = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.queues) {
      writer.uint32(10).string(v);
    }
    if (message.waitTimeout !== void 0) {
      Duration.encode(message.waitTimeout, writer.uint32(18).fork()).join();
    }
    if (message.leaseDuration !== void 0) {
      Duration.encode(message.leaseDuration, writer.uint32(26).fork()).join();
    }
    if (message.workerId !== void 0) {
      writer.uint32(34).string(message.workerId);
    }
    if (message.maxJobs !== void 0) {
      writer.uint32(40).uint32(message.maxJobs);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseReserveRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.queues.push(reader.string());
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.waitTimeout = Duration.decode(reader, reader.uint32());
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.leaseDuration = Duration.decode(reader, reader.uint32());
            continue;
          }
          case 4: {
            if (tag !== 34) {
              break;
            }
            message.workerId = reader.string();
            continue;
          }
          case 5: {
            if (tag !== 40) {
              break;
            }
            message.maxJobs = reader.uint32();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseReserveResponse() {
  return { jobs: [] };
}
var ReserveResponse = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.jobs) {
      Job.encode(v, writer.uint32(10).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseReserveResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobs.push(Job.decode(reader, reader.uint32()));
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseAckRequest() {
  return { jobId: "", attempt: 0, workerId: void 0 };
}
var AckRequest = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.jobId !== "") {
      writer.uint32(10).string(message.jobId);
    }
    if (message.attempt !== 0) {
      writer.uint32(16).uint32(message.attempt);
    }
    if (message.workerId !== void 0) {
      writer.uint32(26).string(message.workerId);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseAckRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobId = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.attempt = reader.uint32();
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.workerId = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseAckResponse() {
  return { jobId: "" };
}
var AckResponse = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.jobId !== "") {
      writer.uint32(10).string(message.jobId);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseAckResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobId = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseScheduleDefinition() {
  return { id: "", cadence: void 0, job: void 0, overlap: 0, catchUp: 0 };
}
var ScheduleDefinition = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.id !== "") {
      writer.uint32(10).string(message.id);
    }
    switch (message.cadence?.$case) {
      case "cron":
        CronCadence.encode(message.cadence.value, writer.uint32(18).fork()).join();
        break;
      case "every":
        Duration.encode(message.cadence.value, writer.uint32(26).fork()).join();
        break;
    }
    if (message.job !== void 0) {
      EnqueueRequest.encode(message.job, writer.uint32(34).fork()).join();
    }
    if (message.overlap !== 0) {
      writer.uint32(40).int32(message.overlap);
    }
    if (message.catchUp !== 0) {
      writer.uint32(48).int32(message.catchUp);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseScheduleDefinition();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.id = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.cadence = { $case: "cron", value: CronCadence.decode(reader, reader.uint32()) };
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.cadence = { $case: "every", value: Duration.decode(reader, reader.uint32()) };
            continue;
          }
          case 4: {
            if (tag !== 34) {
              break;
            }
            message.job = EnqueueRequest.decode(reader, reader.uint32());
            continue;
          }
          case 5: {
            if (tag !== 40) {
              break;
            }
            message.overlap = reader.int32();
            continue;
          }
          case 6: {
            if (tag !== 48) {
              break;
            }
            message.catchUp = reader.int32();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseCronCadence() {
  return { expression: "", timeZone: "" };
}
var CronCadence = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.expression !== "") {
      writer.uint32(10).string(message.expression);
    }
    if (message.timeZone !== "") {
      writer.uint32(18).string(message.timeZone);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseCronCadence();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.expression = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.timeZone = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseScheduleInfo() {
  return {
    definition: void 0,
    nextFireAt: void 0,
    lastSlotAt: void 0,
    lastJobId: void 0,
    fired: 0n,
    createdAt: void 0
  };
}
var ScheduleInfo = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.definition !== void 0) {
      ScheduleDefinition.encode(message.definition, writer.uint32(10).fork()).join();
    }
    if (message.nextFireAt !== void 0) {
      Timestamp.encode(message.nextFireAt, writer.uint32(18).fork()).join();
    }
    if (message.lastSlotAt !== void 0) {
      Timestamp.encode(message.lastSlotAt, writer.uint32(26).fork()).join();
    }
    if (message.lastJobId !== void 0) {
      writer.uint32(34).string(message.lastJobId);
    }
    if (message.fired !== 0n) {
      if (BigInt.asUintN(64, message.fired) !== message.fired) {
        throw new globalThis.Error("value provided for field message.fired of type uint64 too large");
      }
      writer.uint32(40).uint64(message.fired);
    }
    if (message.createdAt !== void 0) {
      Timestamp.encode(message.createdAt, writer.uint32(50).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseScheduleInfo();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.definition = ScheduleDefinition.decode(reader, reader.uint32());
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.nextFireAt = Timestamp.decode(reader, reader.uint32());
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.lastSlotAt = Timestamp.decode(reader, reader.uint32());
            continue;
          }
          case 4: {
            if (tag !== 34) {
              break;
            }
            message.lastJobId = reader.string();
            continue;
          }
          case 5: {
            if (tag !== 40) {
              break;
            }
            message.fired = reader.uint64();
            continue;
          }
          case 6: {
            if (tag !== 50) {
              break;
            }
            message.createdAt = Timestamp.decode(reader, reader.uint32());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseUpsertScheduleRequest() {
  return { schedule: void 0 };
}
var UpsertScheduleRequest = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.schedule !== void 0) {
      ScheduleDefinition.encode(message.schedule, writer.uint32(10).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseUpsertScheduleRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.schedule = ScheduleDefinition.decode(reader, reader.uint32());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseDeleteScheduleRequest() {
  return { id: "" };
}
var DeleteScheduleRequest = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.id !== "") {
      writer.uint32(10).string(message.id);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseDeleteScheduleRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.id = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseDeleteScheduleResponse() {
  return { deleted: false };
}
var DeleteScheduleResponse = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.deleted !== false) {
      writer.uint32(8).bool(message.deleted);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseDeleteScheduleResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.deleted = reader.bool();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseListSchedulesRequest() {
  return {};
}
var ListSchedulesRequest = {
  encode(_, writer = new BinaryWriter4()) {
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseListSchedulesRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseListSchedulesResponse() {
  return { schedules: [] };
}
var ListSchedulesResponse = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.schedules) {
      ScheduleInfo.encode(v, writer.uint32(10).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseListSchedulesResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.schedules.push(ScheduleInfo.decode(reader, reader.uint32()));
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBasePauseQueueRequest() {
  return { queue: "", until: void 0, reason: void 0 };
}
var PauseQueueRequest = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.queue !== "") {
      writer.uint32(10).string(message.queue);
    }
    if (message.until !== void 0) {
      Timestamp.encode(message.until, writer.uint32(18).fork()).join();
    }
    if (message.reason !== void 0) {
      writer.uint32(26).string(message.reason);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBasePauseQueueRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.queue = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.until = Timestamp.decode(reader, reader.uint32());
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.reason = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBasePauseQueueResponse() {
  return { pause: void 0 };
}
var PauseQueueResponse = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.pause !== void 0) {
      QueuePause.encode(message.pause, writer.uint32(10).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBasePauseQueueResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.pause = QueuePause.decode(reader, reader.uint32());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseResumeQueueRequest() {
  return { queue: "" };
}
var ResumeQueueRequest = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.queue !== "") {
      writer.uint32(10).string(message.queue);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseResumeQueueRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.queue = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseResumeQueueResponse() {
  return { resumed: false };
}
var ResumeQueueResponse = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.resumed !== false) {
      writer.uint32(8).bool(message.resumed);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseResumeQueueResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.resumed = reader.bool();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseListPausesRequest() {
  return {};
}
var ListPausesRequest = {
  encode(_, writer = new BinaryWriter4()) {
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseListPausesRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseListPausesResponse() {
  return { pauses: [] };
}
var ListPausesResponse = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.pauses) {
      QueuePause.encode(v, writer.uint32(10).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseListPausesResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.pauses.push(QueuePause.decode(reader, reader.uint32()));
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseQueuePause() {
  return { queue: "", until: void 0 };
}
var QueuePause = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.queue !== "") {
      writer.uint32(10).string(message.queue);
    }
    if (message.until !== void 0) {
      Timestamp.encode(message.until, writer.uint32(18).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseQueuePause();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.queue = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.until = Timestamp.decode(reader, reader.uint32());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseCancelJobRequest() {
  return { jobId: "", reason: void 0 };
}
var CancelJobRequest = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.jobId !== "") {
      writer.uint32(10).string(message.jobId);
    }
    if (message.reason !== void 0) {
      writer.uint32(18).string(message.reason);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseCancelJobRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobId = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.reason = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseCancelJobResponse() {
  return { jobId: "", wasLeased: false };
}
var CancelJobResponse = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.jobId !== "") {
      writer.uint32(10).string(message.jobId);
    }
    if (message.wasLeased !== false) {
      writer.uint32(16).bool(message.wasLeased);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseCancelJobResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobId = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.wasLeased = reader.bool();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseAckBatchRequest() {
  return { acks: [] };
}
var AckBatchRequest = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.acks) {
      AckRequest.encode(v, writer.uint32(10).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseAckBatchRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.acks.push(AckRequest.decode(reader, reader.uint32()));
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseAckBatchResponse() {
  return { results: [] };
}
var AckBatchResponse = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.results) {
      AckResult.encode(v, writer.uint32(10).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseAckBatchResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.results.push(AckResult.decode(reader, reader.uint32()));
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseAckResult() {
  return { outcome: void 0 };
}
var AckResult = {
  encode(message, writer = new BinaryWriter4()) {
    switch (message.outcome?.$case) {
      case "success":
        AckResponse.encode(message.outcome.value, writer.uint32(10).fork()).join();
        break;
      case "error":
        CallStatus.encode(message.outcome.value, writer.uint32(18).fork()).join();
        break;
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseAckResult();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.outcome = { $case: "success", value: AckResponse.decode(reader, reader.uint32()) };
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.outcome = { $case: "error", value: CallStatus.decode(reader, reader.uint32()) };
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseCallStatus() {
  return { code: 0, message: "", cancelled: false };
}
var CallStatus = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.code !== 0) {
      writer.uint32(8).int32(message.code);
    }
    if (message.message !== "") {
      writer.uint32(18).string(message.message);
    }
    if (message.cancelled !== false) {
      writer.uint32(24).bool(message.cancelled);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseCallStatus();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.code = reader.int32();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.message = reader.string();
            continue;
          }
          case 3: {
            if (tag !== 24) {
              break;
            }
            message.cancelled = reader.bool();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseNackRequest() {
  return { jobId: "", attempt: 0, reason: void 0, retry: void 0, workerId: void 0 };
}
var NackRequest = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.jobId !== "") {
      writer.uint32(10).string(message.jobId);
    }
    if (message.attempt !== 0) {
      writer.uint32(16).uint32(message.attempt);
    }
    if (message.reason !== void 0) {
      writer.uint32(26).string(message.reason);
    }
    if (message.retry !== void 0) {
      NackRetry.encode(message.retry, writer.uint32(34).fork()).join();
    }
    if (message.workerId !== void 0) {
      writer.uint32(42).string(message.workerId);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseNackRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobId = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.attempt = reader.uint32();
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.reason = reader.string();
            continue;
          }
          case 4: {
            if (tag !== 34) {
              break;
            }
            message.retry = NackRetry.decode(reader, reader.uint32());
            continue;
          }
          case 5: {
            if (tag !== 42) {
              break;
            }
            message.workerId = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseNackRetry() {
  return { strategy: void 0 };
}
var NackRetry = {
  encode(message, writer = new BinaryWriter4()) {
    switch (message.strategy?.$case) {
      case "default":
        Empty.encode(message.strategy.value, writer.uint32(10).fork()).join();
        break;
      case "delay":
        Duration.encode(message.strategy.value, writer.uint32(18).fork()).join();
        break;
      case "deadLetter":
        Empty.encode(message.strategy.value, writer.uint32(26).fork()).join();
        break;
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseNackRetry();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.strategy = { $case: "default", value: Empty.decode(reader, reader.uint32()) };
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.strategy = { $case: "delay", value: Duration.decode(reader, reader.uint32()) };
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.strategy = { $case: "deadLetter", value: Empty.decode(reader, reader.uint32()) };
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseNackResponse() {
  return { jobId: "", deadLettered: false };
}
var NackResponse = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.jobId !== "") {
      writer.uint32(10).string(message.jobId);
    }
    if (message.deadLettered !== false) {
      writer.uint32(16).bool(message.deadLettered);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseNackResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobId = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.deadLettered = reader.bool();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseExtendRequest() {
  return { jobId: "", attempt: 0, leaseDuration: void 0, workerId: void 0 };
}
var ExtendRequest = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.jobId !== "") {
      writer.uint32(10).string(message.jobId);
    }
    if (message.attempt !== 0) {
      writer.uint32(16).uint32(message.attempt);
    }
    if (message.leaseDuration !== void 0) {
      Duration.encode(message.leaseDuration, writer.uint32(26).fork()).join();
    }
    if (message.workerId !== void 0) {
      writer.uint32(34).string(message.workerId);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseExtendRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobId = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.attempt = reader.uint32();
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.leaseDuration = Duration.decode(reader, reader.uint32());
            continue;
          }
          case 4: {
            if (tag !== 34) {
              break;
            }
            message.workerId = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseExtendResponse() {
  return { jobId: "", leaseExpiresAt: void 0 };
}
var ExtendResponse = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.jobId !== "") {
      writer.uint32(10).string(message.jobId);
    }
    if (message.leaseExpiresAt !== void 0) {
      Timestamp.encode(message.leaseExpiresAt, writer.uint32(18).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseExtendResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobId = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.leaseExpiresAt = Timestamp.decode(reader, reader.uint32());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseDeadLetterRecord() {
  return { job: void 0, cause: 0, failedAt: void 0, finalAttempt: 0, lastReason: void 0 };
}
var DeadLetterRecord = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.job !== void 0) {
      Job.encode(message.job, writer.uint32(10).fork()).join();
    }
    if (message.cause !== 0) {
      writer.uint32(16).int32(message.cause);
    }
    if (message.failedAt !== void 0) {
      Timestamp.encode(message.failedAt, writer.uint32(26).fork()).join();
    }
    if (message.finalAttempt !== 0) {
      writer.uint32(32).uint32(message.finalAttempt);
    }
    if (message.lastReason !== void 0) {
      writer.uint32(42).string(message.lastReason);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseDeadLetterRecord();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.job = Job.decode(reader, reader.uint32());
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.cause = reader.int32();
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.failedAt = Timestamp.decode(reader, reader.uint32());
            continue;
          }
          case 4: {
            if (tag !== 32) {
              break;
            }
            message.finalAttempt = reader.uint32();
            continue;
          }
          case 5: {
            if (tag !== 42) {
              break;
            }
            message.lastReason = reader.string();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseDrainDeadLettersRequest() {
  return { queue: void 0, max: void 0 };
}
var DrainDeadLettersRequest = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.queue !== void 0) {
      writer.uint32(10).string(message.queue);
    }
    if (message.max !== void 0) {
      writer.uint32(16).uint32(message.max);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseDrainDeadLettersRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.queue = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.max = reader.uint32();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseDrainDeadLettersResponse() {
  return { records: [] };
}
var DrainDeadLettersResponse = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.records) {
      DeadLetterRecord.encode(v, writer.uint32(10).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseDrainDeadLettersResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.records.push(DeadLetterRecord.decode(reader, reader.uint32()));
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseGetServerInfoRequest() {
  return {};
}
var GetServerInfoRequest = {
  encode(_, writer = new BinaryWriter4()) {
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseGetServerInfoRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseGetServerInfoResponse() {
  return {
    serverVersion: "",
    supportedProtocolVersions: [],
    serverTime: void 0,
    restrictsEncodings: false,
    allowedEncodings: [],
    maxPayloadBytes: 0n,
    maxCustomEntries: 0,
    maxCustomTotalBytes: 0n,
    maxCustomKeyBytes: 0,
    maxQueueNameBytes: 0,
    maxJobTypeBytes: 0,
    maxIdempotencyKeyBytes: 0,
    maxScheduleHorizon: void 0,
    maxEnqueueBatch: 0,
    maxReserveBatch: 0,
    maxReserveQueues: 0,
    maxWaitTimeout: void 0,
    maxLeaseDuration: void 0,
    strictQueues: false,
    deadLetterRetentionEnabled: false,
    features: [],
    cluster: void 0,
    maxConsumeCredits: 0
  };
}
var GetServerInfoResponse = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.serverVersion !== "") {
      writer.uint32(10).string(message.serverVersion);
    }
    for (const v of message.supportedProtocolVersions) {
      writer.uint32(18).string(v);
    }
    if (message.serverTime !== void 0) {
      Timestamp.encode(message.serverTime, writer.uint32(26).fork()).join();
    }
    if (message.restrictsEncodings !== false) {
      writer.uint32(32).bool(message.restrictsEncodings);
    }
    for (const v of message.allowedEncodings) {
      writer.uint32(42).string(v);
    }
    if (message.maxPayloadBytes !== 0n) {
      if (BigInt.asUintN(64, message.maxPayloadBytes) !== message.maxPayloadBytes) {
        throw new globalThis.Error("value provided for field message.maxPayloadBytes of type uint64 too large");
      }
      writer.uint32(48).uint64(message.maxPayloadBytes);
    }
    if (message.maxCustomEntries !== 0) {
      writer.uint32(56).uint32(message.maxCustomEntries);
    }
    if (message.maxCustomTotalBytes !== 0n) {
      if (BigInt.asUintN(64, message.maxCustomTotalBytes) !== message.maxCustomTotalBytes) {
        throw new globalThis.Error("value provided for field message.maxCustomTotalBytes of type uint64 too large");
      }
      writer.uint32(64).uint64(message.maxCustomTotalBytes);
    }
    if (message.maxCustomKeyBytes !== 0) {
      writer.uint32(72).uint32(message.maxCustomKeyBytes);
    }
    if (message.maxQueueNameBytes !== 0) {
      writer.uint32(80).uint32(message.maxQueueNameBytes);
    }
    if (message.maxJobTypeBytes !== 0) {
      writer.uint32(88).uint32(message.maxJobTypeBytes);
    }
    if (message.maxIdempotencyKeyBytes !== 0) {
      writer.uint32(96).uint32(message.maxIdempotencyKeyBytes);
    }
    if (message.maxScheduleHorizon !== void 0) {
      Duration.encode(message.maxScheduleHorizon, writer.uint32(106).fork()).join();
    }
    if (message.maxEnqueueBatch !== 0) {
      writer.uint32(112).uint32(message.maxEnqueueBatch);
    }
    if (message.maxReserveBatch !== 0) {
      writer.uint32(120).uint32(message.maxReserveBatch);
    }
    if (message.maxReserveQueues !== 0) {
      writer.uint32(128).uint32(message.maxReserveQueues);
    }
    if (message.maxWaitTimeout !== void 0) {
      Duration.encode(message.maxWaitTimeout, writer.uint32(138).fork()).join();
    }
    if (message.maxLeaseDuration !== void 0) {
      Duration.encode(message.maxLeaseDuration, writer.uint32(146).fork()).join();
    }
    if (message.strictQueues !== false) {
      writer.uint32(152).bool(message.strictQueues);
    }
    if (message.deadLetterRetentionEnabled !== false) {
      writer.uint32(160).bool(message.deadLetterRetentionEnabled);
    }
    for (const v of message.features) {
      writer.uint32(170).string(v);
    }
    if (message.cluster !== void 0) {
      ClusterInfo.encode(message.cluster, writer.uint32(178).fork()).join();
    }
    if (message.maxConsumeCredits !== 0) {
      writer.uint32(184).uint32(message.maxConsumeCredits);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseGetServerInfoResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.serverVersion = reader.string();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.supportedProtocolVersions.push(reader.string());
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.serverTime = Timestamp.decode(reader, reader.uint32());
            continue;
          }
          case 4: {
            if (tag !== 32) {
              break;
            }
            message.restrictsEncodings = reader.bool();
            continue;
          }
          case 5: {
            if (tag !== 42) {
              break;
            }
            message.allowedEncodings.push(reader.string());
            continue;
          }
          case 6: {
            if (tag !== 48) {
              break;
            }
            message.maxPayloadBytes = reader.uint64();
            continue;
          }
          case 7: {
            if (tag !== 56) {
              break;
            }
            message.maxCustomEntries = reader.uint32();
            continue;
          }
          case 8: {
            if (tag !== 64) {
              break;
            }
            message.maxCustomTotalBytes = reader.uint64();
            continue;
          }
          case 9: {
            if (tag !== 72) {
              break;
            }
            message.maxCustomKeyBytes = reader.uint32();
            continue;
          }
          case 10: {
            if (tag !== 80) {
              break;
            }
            message.maxQueueNameBytes = reader.uint32();
            continue;
          }
          case 11: {
            if (tag !== 88) {
              break;
            }
            message.maxJobTypeBytes = reader.uint32();
            continue;
          }
          case 12: {
            if (tag !== 96) {
              break;
            }
            message.maxIdempotencyKeyBytes = reader.uint32();
            continue;
          }
          case 13: {
            if (tag !== 106) {
              break;
            }
            message.maxScheduleHorizon = Duration.decode(reader, reader.uint32());
            continue;
          }
          case 14: {
            if (tag !== 112) {
              break;
            }
            message.maxEnqueueBatch = reader.uint32();
            continue;
          }
          case 15: {
            if (tag !== 120) {
              break;
            }
            message.maxReserveBatch = reader.uint32();
            continue;
          }
          case 16: {
            if (tag !== 128) {
              break;
            }
            message.maxReserveQueues = reader.uint32();
            continue;
          }
          case 17: {
            if (tag !== 138) {
              break;
            }
            message.maxWaitTimeout = Duration.decode(reader, reader.uint32());
            continue;
          }
          case 18: {
            if (tag !== 146) {
              break;
            }
            message.maxLeaseDuration = Duration.decode(reader, reader.uint32());
            continue;
          }
          case 19: {
            if (tag !== 152) {
              break;
            }
            message.strictQueues = reader.bool();
            continue;
          }
          case 20: {
            if (tag !== 160) {
              break;
            }
            message.deadLetterRetentionEnabled = reader.bool();
            continue;
          }
          case 21: {
            if (tag !== 170) {
              break;
            }
            message.features.push(reader.string());
            continue;
          }
          case 22: {
            if (tag !== 178) {
              break;
            }
            message.cluster = ClusterInfo.decode(reader, reader.uint32());
            continue;
          }
          case 23: {
            if (tag !== 184) {
              break;
            }
            message.maxConsumeCredits = reader.uint32();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseClusterInfo() {
  return {
    nodeId: 0n,
    role: "",
    term: 0n,
    leaderId: void 0,
    leaderAddr: "",
    lastAppliedIndex: void 0,
    members: []
  };
}
var ClusterInfo = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.nodeId !== 0n) {
      if (BigInt.asUintN(64, message.nodeId) !== message.nodeId) {
        throw new globalThis.Error("value provided for field message.nodeId of type uint64 too large");
      }
      writer.uint32(8).uint64(message.nodeId);
    }
    if (message.role !== "") {
      writer.uint32(18).string(message.role);
    }
    if (message.term !== 0n) {
      if (BigInt.asUintN(64, message.term) !== message.term) {
        throw new globalThis.Error("value provided for field message.term of type uint64 too large");
      }
      writer.uint32(24).uint64(message.term);
    }
    if (message.leaderId !== void 0) {
      if (BigInt.asUintN(64, message.leaderId) !== message.leaderId) {
        throw new globalThis.Error("value provided for field message.leaderId of type uint64 too large");
      }
      writer.uint32(32).uint64(message.leaderId);
    }
    if (message.leaderAddr !== "") {
      writer.uint32(42).string(message.leaderAddr);
    }
    if (message.lastAppliedIndex !== void 0) {
      if (BigInt.asUintN(64, message.lastAppliedIndex) !== message.lastAppliedIndex) {
        throw new globalThis.Error("value provided for field message.lastAppliedIndex of type uint64 too large");
      }
      writer.uint32(48).uint64(message.lastAppliedIndex);
    }
    for (const v of message.members) {
      ClusterMember.encode(v, writer.uint32(58).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseClusterInfo();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.nodeId = reader.uint64();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.role = reader.string();
            continue;
          }
          case 3: {
            if (tag !== 24) {
              break;
            }
            message.term = reader.uint64();
            continue;
          }
          case 4: {
            if (tag !== 32) {
              break;
            }
            message.leaderId = reader.uint64();
            continue;
          }
          case 5: {
            if (tag !== 42) {
              break;
            }
            message.leaderAddr = reader.string();
            continue;
          }
          case 6: {
            if (tag !== 48) {
              break;
            }
            message.lastAppliedIndex = reader.uint64();
            continue;
          }
          case 7: {
            if (tag !== 58) {
              break;
            }
            message.members.push(ClusterMember.decode(reader, reader.uint32()));
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseClusterMember() {
  return { id: 0n, addr: "", voter: false, replicationLag: void 0 };
}
var ClusterMember = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.id !== 0n) {
      if (BigInt.asUintN(64, message.id) !== message.id) {
        throw new globalThis.Error("value provided for field message.id of type uint64 too large");
      }
      writer.uint32(8).uint64(message.id);
    }
    if (message.addr !== "") {
      writer.uint32(18).string(message.addr);
    }
    if (message.voter !== false) {
      writer.uint32(24).bool(message.voter);
    }
    if (message.replicationLag !== void 0) {
      if (BigInt.asUintN(64, message.replicationLag) !== message.replicationLag) {
        throw new globalThis.Error("value provided for field message.replicationLag of type uint64 too large");
      }
      writer.uint32(32).uint64(message.replicationLag);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseClusterMember();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.id = reader.uint64();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.addr = reader.string();
            continue;
          }
          case 3: {
            if (tag !== 24) {
              break;
            }
            message.voter = reader.bool();
            continue;
          }
          case 4: {
            if (tag !== 32) {
              break;
            }
            message.replicationLag = reader.uint64();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseConsumeRequest() {
  return { open: void 0, credits: 0, settles: [] };
}
var ConsumeRequest = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.open !== void 0) {
      ConsumeOpen.encode(message.open, writer.uint32(10).fork()).join();
    }
    if (message.credits !== 0) {
      writer.uint32(16).uint32(message.credits);
    }
    for (const v of message.settles) {
      ConsumeSettle.encode(v, writer.uint32(26).fork()).join();
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseConsumeRequest();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.open = ConsumeOpen.decode(reader, reader.uint32());
            continue;
          }
          case 2: {
            if (tag !== 16) {
              break;
            }
            message.credits = reader.uint32();
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.settles.push(ConsumeSettle.decode(reader, reader.uint32()));
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseConsumeOpen() {
  return { queues: [], leaseDuration: void 0, workerId: void 0, credits: 0 };
}
var ConsumeOpen = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.queues) {
      writer.uint32(10).string(v);
    }
    if (message.leaseDuration !== void 0) {
      Duration.encode(message.leaseDuration, writer.uint32(18).fork()).join();
    }
    if (message.workerId !== void 0) {
      writer.uint32(26).string(message.workerId);
    }
    if (message.credits !== 0) {
      writer.uint32(32).uint32(message.credits);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseConsumeOpen();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.queues.push(reader.string());
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.leaseDuration = Duration.decode(reader, reader.uint32());
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.workerId = reader.string();
            continue;
          }
          case 4: {
            if (tag !== 32) {
              break;
            }
            message.credits = reader.uint32();
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseConsumeSettle() {
  return { id: 0n, op: void 0 };
}
var ConsumeSettle = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.id !== 0n) {
      if (BigInt.asUintN(64, message.id) !== message.id) {
        throw new globalThis.Error("value provided for field message.id of type uint64 too large");
      }
      writer.uint32(8).uint64(message.id);
    }
    switch (message.op?.$case) {
      case "ack":
        AckRequest.encode(message.op.value, writer.uint32(18).fork()).join();
        break;
      case "nack":
        NackRequest.encode(message.op.value, writer.uint32(26).fork()).join();
        break;
      case "extend":
        ExtendRequest.encode(message.op.value, writer.uint32(34).fork()).join();
        break;
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseConsumeSettle();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.id = reader.uint64();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.op = { $case: "ack", value: AckRequest.decode(reader, reader.uint32()) };
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.op = { $case: "nack", value: NackRequest.decode(reader, reader.uint32()) };
            continue;
          }
          case 4: {
            if (tag !== 34) {
              break;
            }
            message.op = { $case: "extend", value: ExtendRequest.decode(reader, reader.uint32()) };
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseConsumeResponse() {
  return { jobs: [], results: [], cancelled: [] };
}
var ConsumeResponse = {
  encode(message, writer = new BinaryWriter4()) {
    for (const v of message.jobs) {
      Job.encode(v, writer.uint32(10).fork()).join();
    }
    for (const v of message.results) {
      ConsumeResult.encode(v, writer.uint32(18).fork()).join();
    }
    for (const v of message.cancelled) {
      writer.uint32(26).string(v);
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseConsumeResponse();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 10) {
              break;
            }
            message.jobs.push(Job.decode(reader, reader.uint32()));
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.results.push(ConsumeResult.decode(reader, reader.uint32()));
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.cancelled.push(reader.string());
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
function createBaseConsumeResult() {
  return { id: 0n, outcome: void 0 };
}
var ConsumeResult = {
  encode(message, writer = new BinaryWriter4()) {
    if (message.id !== 0n) {
      if (BigInt.asUintN(64, message.id) !== message.id) {
        throw new globalThis.Error("value provided for field message.id of type uint64 too large");
      }
      writer.uint32(8).uint64(message.id);
    }
    switch (message.outcome?.$case) {
      case "ack":
        AckResponse.encode(message.outcome.value, writer.uint32(18).fork()).join();
        break;
      case "nack":
        NackResponse.encode(message.outcome.value, writer.uint32(26).fork()).join();
        break;
      case "extend":
        ExtendResponse.encode(message.outcome.value, writer.uint32(34).fork()).join();
        break;
      case "error":
        CallStatus.encode(message.outcome.value, writer.uint32(42).fork()).join();
        break;
    }
    return writer;
  },
  decode(input, length) {
    const reader = input instanceof BinaryReader4 ? input : new BinaryReader4(input);
    const previousRecursionDepth = reader.__tsProtoDecodeDepth ?? 0;
    if (previousRecursionDepth >= 100) {
      throw new globalThis.Error("protobuf decode recursion limit exceeded");
    }
    reader.__tsProtoDecodeDepth = previousRecursionDepth + 1;
    try {
      const end = length === void 0 ? reader.len : reader.pos + length;
      const message = createBaseConsumeResult();
      while (reader.pos < end) {
        const tag = reader.uint32();
        switch (tag >>> 3) {
          case 1: {
            if (tag !== 8) {
              break;
            }
            message.id = reader.uint64();
            continue;
          }
          case 2: {
            if (tag !== 18) {
              break;
            }
            message.outcome = { $case: "ack", value: AckResponse.decode(reader, reader.uint32()) };
            continue;
          }
          case 3: {
            if (tag !== 26) {
              break;
            }
            message.outcome = { $case: "nack", value: NackResponse.decode(reader, reader.uint32()) };
            continue;
          }
          case 4: {
            if (tag !== 34) {
              break;
            }
            message.outcome = { $case: "extend", value: ExtendResponse.decode(reader, reader.uint32()) };
            continue;
          }
          case 5: {
            if (tag !== 42) {
              break;
            }
            message.outcome = { $case: "error", value: CallStatus.decode(reader, reader.uint32()) };
            continue;
          }
        }
        if ((tag & 7) === 4 || tag === 0) {
          break;
        }
        reader.skip(tag & 7);
      }
      return message;
    } finally {
      reader.__tsProtoDecodeDepth = previousRecursionDepth;
    }
  }
};
var QueueServiceService = {
  /** Best effort: every job is accepted or rejected on its own. */
  enqueueBatch: {
    path: "/sepp.v1.QueueService/EnqueueBatch",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(EnqueueBatchRequest.encode(value).finish()),
    requestDeserialize: (value) => EnqueueBatchRequest.decode(value),
    responseSerialize: (value) => Buffer.from(EnqueueBatchResponse.encode(value).finish()),
    responseDeserialize: (value) => EnqueueBatchResponse.decode(value)
  },
  /** All or nothing: either every job is accepted or none is written. */
  enqueueAtomic: {
    path: "/sepp.v1.QueueService/EnqueueAtomic",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(EnqueueBatchRequest.encode(value).finish()),
    requestDeserialize: (value) => EnqueueBatchRequest.decode(value),
    responseSerialize: (value) => Buffer.from(EnqueueAtomicResponse.encode(value).finish()),
    responseDeserialize: (value) => EnqueueAtomicResponse.decode(value)
  },
  /** Claims ready jobs under a lease, waiting up to wait_timeout for one. */
  reserve: {
    path: "/sepp.v1.QueueService/Reserve",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(ReserveRequest.encode(value).finish()),
    requestDeserialize: (value) => ReserveRequest.decode(value),
    responseSerialize: (value) => Buffer.from(ReserveResponse.encode(value).finish()),
    responseDeserialize: (value) => ReserveResponse.decode(value)
  },
  /** Completes a leased job; it is deleted. */
  ack: {
    path: "/sepp.v1.QueueService/Ack",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(AckRequest.encode(value).finish()),
    requestDeserialize: (value) => AckRequest.decode(value),
    responseSerialize: (value) => Buffer.from(AckResponse.encode(value).finish()),
    responseDeserialize: (value) => AckResponse.decode(value)
  },
  /** Fails a leased job: retry it later or dead-letter it. */
  nack: {
    path: "/sepp.v1.QueueService/Nack",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(NackRequest.encode(value).finish()),
    requestDeserialize: (value) => NackRequest.decode(value),
    responseSerialize: (value) => Buffer.from(NackResponse.encode(value).finish()),
    responseDeserialize: (value) => NackResponse.decode(value)
  },
  /** Moves a lease deadline to now + lease_duration. */
  extend: {
    path: "/sepp.v1.QueueService/Extend",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(ExtendRequest.encode(value).finish()),
    requestDeserialize: (value) => ExtendRequest.decode(value),
    responseSerialize: (value) => Buffer.from(ExtendResponse.encode(value).finish()),
    responseDeserialize: (value) => ExtendResponse.decode(value)
  },
  /** Removes and returns the oldest dead-letter records. */
  drainDeadLetters: {
    path: "/sepp.v1.QueueService/DrainDeadLetters",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(DrainDeadLettersRequest.encode(value).finish()),
    requestDeserialize: (value) => DrainDeadLettersRequest.decode(value),
    responseSerialize: (value) => Buffer.from(DrainDeadLettersResponse.encode(value).finish()),
    responseDeserialize: (value) => DrainDeadLettersResponse.decode(value)
  },
  /** The server's version and limits. */
  getServerInfo: {
    path: "/sepp.v1.QueueService/GetServerInfo",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(GetServerInfoRequest.encode(value).finish()),
    requestDeserialize: (value) => GetServerInfoRequest.decode(value),
    responseSerialize: (value) => Buffer.from(GetServerInfoResponse.encode(value).finish()),
    responseDeserialize: (value) => GetServerInfoResponse.decode(value)
  },
  /**
   * Completes several leased jobs in one call (added after 0.1; GetServerInfo lists the
   * feature "ack_batch"). Each item is answered on its own, exactly as the same Ack sent
   * alone would be, and every success is durable before the call returns.
   */
  ackBatch: {
    path: "/sepp.v1.QueueService/AckBatch",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(AckBatchRequest.encode(value).finish()),
    requestDeserialize: (value) => AckBatchRequest.decode(value),
    responseSerialize: (value) => Buffer.from(AckBatchResponse.encode(value).finish()),
    responseDeserialize: (value) => AckBatchResponse.decode(value)
  },
  /**
   * Cancels a job by id (added after 0.1; GetServerInfo lists the feature "cancel"). A ready
   * or scheduled job is dead-lettered at once with cause CANCELLED. A leased job is marked:
   * its worker's next Extend, Ack or Nack fails NOT_FOUND with the trailer
   * `sepp-cancelled: true` (a 0.1 client sees a lost lease), and it is never delivered again.
   */
  cancelJob: {
    path: "/sepp.v1.QueueService/CancelJob",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(CancelJobRequest.encode(value).finish()),
    requestDeserialize: (value) => CancelJobRequest.decode(value),
    responseSerialize: (value) => Buffer.from(CancelJobResponse.encode(value).finish()),
    responseDeserialize: (value) => CancelJobResponse.decode(value)
  },
  /**
   * Recurring schedules (added after 0.1; GetServerInfo lists the feature "schedules"): each
   * slot of a schedule fires exactly one job, keyed by the schedule id and the slot.
   * Creates or replaces a schedule by id.
   */
  upsertSchedule: {
    path: "/sepp.v1.QueueService/UpsertSchedule",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(UpsertScheduleRequest.encode(value).finish()),
    requestDeserialize: (value) => UpsertScheduleRequest.decode(value),
    responseSerialize: (value) => Buffer.from(ScheduleInfo.encode(value).finish()),
    responseDeserialize: (value) => ScheduleInfo.decode(value)
  },
  deleteSchedule: {
    path: "/sepp.v1.QueueService/DeleteSchedule",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(DeleteScheduleRequest.encode(value).finish()),
    requestDeserialize: (value) => DeleteScheduleRequest.decode(value),
    responseSerialize: (value) => Buffer.from(DeleteScheduleResponse.encode(value).finish()),
    responseDeserialize: (value) => DeleteScheduleResponse.decode(value)
  },
  listSchedules: {
    path: "/sepp.v1.QueueService/ListSchedules",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(ListSchedulesRequest.encode(value).finish()),
    requestDeserialize: (value) => ListSchedulesRequest.decode(value),
    responseSerialize: (value) => Buffer.from(ListSchedulesResponse.encode(value).finish()),
    responseDeserialize: (value) => ListSchedulesResponse.decode(value)
  },
  /**
   * Pausing queues (added after 0.1; GetServerInfo lists the feature "pause"): reserves skip a
   * paused queue, enqueues are still accepted and leases already held go on.
   */
  pauseQueue: {
    path: "/sepp.v1.QueueService/PauseQueue",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(PauseQueueRequest.encode(value).finish()),
    requestDeserialize: (value) => PauseQueueRequest.decode(value),
    responseSerialize: (value) => Buffer.from(PauseQueueResponse.encode(value).finish()),
    responseDeserialize: (value) => PauseQueueResponse.decode(value)
  },
  resumeQueue: {
    path: "/sepp.v1.QueueService/ResumeQueue",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(ResumeQueueRequest.encode(value).finish()),
    requestDeserialize: (value) => ResumeQueueRequest.decode(value),
    responseSerialize: (value) => Buffer.from(ResumeQueueResponse.encode(value).finish()),
    responseDeserialize: (value) => ResumeQueueResponse.decode(value)
  },
  listPauses: {
    path: "/sepp.v1.QueueService/ListPauses",
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(ListPausesRequest.encode(value).finish()),
    requestDeserialize: (value) => ListPausesRequest.decode(value),
    responseSerialize: (value) => Buffer.from(ListPausesResponse.encode(value).finish()),
    responseDeserialize: (value) => ListPausesResponse.decode(value)
  },
  /**
   * A worker's stream (added after 0.1; GetServerInfo lists the feature "consume"). The worker
   * opens it with a ConsumeOpen and grants credits: how many more jobs it can take. The server
   * leases ready jobs from the named queues and pushes them while credits remain (each job uses
   * one), under the same limits, pauses and ordering as Reserve. Acks, nacks and extends sent on
   * the stream are each answered on it once durable, with the outcome the unary call would have
   * had. A job leased on the stream and then cancelled is named in `cancelled` as it happens.
   * Leases are leases: one not settled in time expires exactly as with Reserve, and closing the
   * stream does not release them. On a follower the stream ends UNAVAILABLE with `sepp-leader`.
   */
  consume: {
    path: "/sepp.v1.QueueService/Consume",
    requestStream: true,
    responseStream: true,
    requestSerialize: (value) => Buffer.from(ConsumeRequest.encode(value).finish()),
    requestDeserialize: (value) => ConsumeRequest.decode(value),
    responseSerialize: (value) => Buffer.from(ConsumeResponse.encode(value).finish()),
    responseDeserialize: (value) => ConsumeResponse.decode(value)
  }
};
var QueueServiceClient = makeGenericClientConstructor(
  QueueServiceService,
  "sepp.v1.QueueService"
);

// src/payload.ts
var utf8 = new TextDecoder("utf-8");
var Payload2 = class _Payload {
  /** The bytes. */
  data;
  /** How the bytes are encoded, e.g. `application/json`. */
  encoding;
  /** A payload of `data` with `encoding`; prefer the factories {@link Payload.json}, `text` and `bytes`. */
  constructor(data, encoding) {
    if (!(data instanceof Uint8Array))
      throw new ValidationError("payload data must be a Uint8Array or Buffer");
    if (data.length === 0) {
      throw new ValidationError("payload data must not be empty (omit the payload for a job without data)");
    }
    if (typeof encoding !== "string") throw new ValidationError("payload encoding must be a string");
    this.data = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    this.encoding = encoding;
  }
  /** `value` as JSON, encoding `application/json`. */
  static json(value) {
    const text = JSON.stringify(value);
    if (text === void 0) throw new ValidationError("Payload.json needs a value that JSON can represent");
    return new _Payload(Buffer.from(text, "utf8"), "application/json");
  }
  /** A string as UTF-8, encoding `text/plain` unless another is given. */
  static text(text, encoding = "text/plain") {
    if (typeof text !== "string") throw new ValidationError("Payload.text needs a string");
    return new _Payload(Buffer.from(text, "utf8"), encoding);
  }
  /** Raw bytes, encoding `application/octet-stream` unless another is given. */
  static bytes(data, encoding = "application/octet-stream") {
    return new _Payload(data, encoding);
  }
  /** The data parsed as JSON (throws a `SyntaxError` if it is not JSON). */
  json() {
    return JSON.parse(this.text());
  }
  /** The data decoded as UTF-8. */
  text() {
    return utf8.decode(this.data);
  }
};
var Priority = {
  P0: 0,
  P1: 1,
  P2: 2,
  P3: 3,
  P4: 4,
  P5: 5,
  P6: 6,
  P7: 7,
  P8: 8,
  P9: 9
};

// src/trace.ts
var HEX = /^[0-9a-fA-F]+$/;
function traceparentProblem(value) {
  const fields = value.split("-");
  if (fields.length !== 4) return "expected 4 dash-separated fields";
  const [version, traceId, spanId, flags] = fields;
  const isHex = (field, length) => field.length === length && HEX.test(field);
  if (!isHex(version, 2)) return "version must be 2 hex digits";
  if (!isHex(traceId, 32)) return "trace id must be 32 hex digits";
  if (/^0+$/.test(traceId)) return "trace id must not be all zeros";
  if (!isHex(spanId, 16)) return "span id must be 16 hex digits";
  if (/^0+$/.test(spanId)) return "span id must not be all zeros";
  if (!isHex(flags, 2)) return "flags must be 2 hex digits";
  return void 0;
}
function parseTraceparent(value) {
  if (traceparentProblem(value) !== void 0) return void 0;
  const [, traceId, spanId, flags] = value.toLowerCase().split("-");
  return { traceId, spanId, flags: Number.parseInt(flags, 16) };
}
function formatTraceparent(traceId, spanId, flags) {
  return `00-${traceId}-${spanId}-${(flags & 255).toString(16).padStart(2, "0")}`;
}

// src/types.ts
var DeadLetterCause = {
  Unspecified: "unspecified",
  AttemptsExhausted: "attempts_exhausted",
  Rejected: "rejected",
  LeaseExpired: "lease_expired",
  Admin: "admin",
  /** Cancelled by `SeppClient.cancel` (or the admin API); a server after 0.1. */
  Cancelled: "cancelled"
};
var DeadLetterRecord2 = class {
  queue;
  jobId;
  jobType;
  payload;
  priority;
  maxAttempts;
  custom;
  traceContext;
  enqueuedAt;
  scheduledAt;
  cause;
  failedAt;
  finalAttempt;
  lastReason;
  constructor(fields) {
    this.queue = fields.queue;
    this.jobId = fields.jobId;
    this.jobType = fields.jobType;
    this.payload = fields.payload;
    this.priority = fields.priority;
    this.maxAttempts = fields.maxAttempts;
    this.custom = fields.custom;
    this.traceContext = fields.traceContext;
    this.enqueuedAt = fields.enqueuedAt;
    this.scheduledAt = fields.scheduledAt;
    this.cause = fields.cause;
    this.failedAt = fields.failedAt;
    this.finalAttempt = fields.finalAttempt;
    this.lastReason = fields.lastReason;
  }
  /**
   * A fresh request to replay this job on its queue: the same type, payload, priority, max attempts,
   * custom metadata and trace context, but no idempotency key and no schedule, so it runs at once.
   * A max attempts of 0 is left to the queue's default.
   */
  toEnqueueRequest() {
    return {
      queue: this.queue,
      jobType: this.jobType,
      payload: this.payload,
      priority: this.priority,
      maxAttempts: this.maxAttempts > 0 ? this.maxAttempts : void 0,
      custom: { ...this.custom },
      traceContext: this.traceContext
    };
  }
};
var ScheduleOverlap = {
  /** Fire nothing for this slot (the default). */
  Skip: "skip",
  /** Fire it anyway. */
  Allow: "allow"
};
var ScheduleCatchUp = {
  /** Fire the latest missed slot once (the default). */
  Latest: "latest",
  /** Fire none of them. */
  None: "none"
};
var ALL_QUEUES = "";

// src/convert.ts
var DecodeError = class extends Error {
  name = "DecodeError";
};
var INT64_MIN = -(2n ** 63n);
var INT64_MAX = 2n ** 63n - 1n;
var UINT32_MAX = 4294967295;
function durationFromMs(ms) {
  const whole = Math.floor(ms);
  const seconds = Math.floor(whole / 1e3);
  const nanos = Math.round((ms - seconds * 1e3) * 1e6);
  return { seconds: BigInt(seconds), nanos: Math.min(nanos, 999999999) };
}
function msFromDuration(duration) {
  if (duration === void 0 || duration.seconds < 0n || duration.nanos < 0 || duration.nanos > 999999999)
    return 0;
  return Number(duration.seconds) * 1e3 + duration.nanos / 1e6;
}
function timestampFromDate(date) {
  const ms = date.getTime();
  if (ms < 0) return void 0;
  const seconds = Math.floor(ms / 1e3);
  return { seconds: BigInt(seconds), nanos: (ms - seconds * 1e3) * 1e6 };
}
function dateFromTimestamp(timestamp) {
  if (timestamp === void 0) return void 0;
  const { seconds, nanos } = timestamp;
  if (seconds < 0n || nanos < 0 || nanos > 999999999 || seconds > 8640000000000n) return void 0;
  return new Date(Number(seconds) * 1e3 + Math.floor(nanos / 1e6));
}
function requiredDate(field, timestamp) {
  if (timestamp === void 0) throw new DecodeError(`missing field ${field}`);
  const date = dateFromTimestamp(timestamp);
  if (date === void 0) throw new DecodeError(`invalid timestamp in ${field}: ${timestamp.seconds}s`);
  return date;
}
function checkMs(name, value, minimum = 0) {
  if (typeof value !== "number" || !Number.isFinite(value) || value < minimum) {
    throw new ValidationError(
      `${name} must be a number of milliseconds of at least ${minimum} (got ${String(value)})`
    );
  }
  return value;
}
function checkCount(name, value, minimum) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < minimum || value > UINT32_MAX) {
    throw new ValidationError(`${name} must be an integer of at least ${minimum} (got ${String(value)})`);
  }
  return value;
}
function customValueToWire(where, key, value) {
  switch (typeof value) {
    case "string":
      return { value: { $case: "stringValue", value } };
    case "boolean":
      return { value: { $case: "boolValue", value } };
    case "bigint":
      if (value < INT64_MIN || value > INT64_MAX) {
        throw new ValidationError(`${where}: custom value ${JSON.stringify(key)} does not fit in 64 bits`);
      }
      return { value: { $case: "intValue", value } };
    case "number":
      return Number.isSafeInteger(value) ? { value: { $case: "intValue", value: BigInt(value) } } : { value: { $case: "doubleValue", value } };
    default:
      throw new ValidationError(
        `${where}: custom value ${JSON.stringify(key)} must be a string, number, bigint or boolean (got ${typeof value})`
      );
  }
}
function customFromWire(custom) {
  const out = {};
  for (const [key, primitive] of Object.entries(custom)) {
    const value = primitive.value;
    if (value === void 0) throw new DecodeError(`custom entry ${JSON.stringify(key)} has no value`);
    if (value.$case === "intValue") {
      const asNumber = Number(value.value);
      out[key] = Number.isSafeInteger(asNumber) ? asNumber : value.value;
    } else {
      out[key] = value.value;
    }
  }
  return out;
}
function checkTraceContext(where, trace) {
  if (typeof trace?.traceparent !== "string")
    throw new ValidationError(`${where}: traceContext.traceparent must be a string`);
  const problem = traceparentProblem(trace.traceparent);
  if (problem !== void 0) throw new ValidationError(`${where}: invalid traceparent (${problem})`);
  const tracestate = trace.tracestate ? trace.tracestate : void 0;
  return { traceparent: trace.traceparent, tracestate };
}
function enqueueRequestToWire(request, where, fallbackTrace) {
  if (typeof request !== "object" || request === null)
    throw new ValidationError(`${where}: a job must be an object`);
  const {
    queue,
    jobType,
    payload,
    idempotencyKey,
    priority,
    maxAttempts,
    custom,
    scheduledAt,
    traceContext
  } = request;
  if (typeof queue !== "string" || queue === "")
    throw new ValidationError(`${where}: queue must be a non-empty string`);
  if (typeof jobType !== "string" || jobType === "") {
    throw new ValidationError(`${where}: jobType must be a non-empty string`);
  }
  if (priority !== void 0 && !(Number.isInteger(priority) && priority >= 0 && priority <= 9)) {
    throw new ValidationError(`${where}: priority must be an integer from 0 to 9 (got ${String(priority)})`);
  }
  if (maxAttempts !== void 0) checkCount(`${where}: maxAttempts`, maxAttempts, 0);
  if (idempotencyKey !== void 0 && typeof idempotencyKey !== "string") {
    throw new ValidationError(`${where}: idempotencyKey must be a string`);
  }
  let wirePayload;
  if (payload !== void 0) {
    if (!(payload?.data instanceof Uint8Array) || typeof payload.encoding !== "string") {
      throw new ValidationError(
        `${where}: payload must be a Payload (see Payload.json, Payload.text, Payload.bytes)`
      );
    }
    if (payload.data.length === 0) throw new ValidationError(`${where}: payload data must not be empty`);
    wirePayload = { data: payload.data, encoding: payload.encoding };
  }
  let scheduled;
  if (scheduledAt !== void 0) {
    if (!(scheduledAt instanceof Date) || Number.isNaN(scheduledAt.getTime())) {
      throw new ValidationError(`${where}: scheduledAt must be a valid Date`);
    }
    scheduled = timestampFromDate(scheduledAt);
  }
  const wireCustom = {};
  if (custom !== void 0) {
    if (typeof custom !== "object" || custom === null)
      throw new ValidationError(`${where}: custom must be an object`);
    for (const [key, value] of Object.entries(custom)) wireCustom[key] = customValueToWire(where, key, value);
  }
  return {
    queue,
    jobType,
    payload: wirePayload,
    idempotencyKey,
    priority,
    maxAttempts,
    traceContext: traceContext === void 0 ? fallbackTrace : checkTraceContext(where, traceContext),
    custom: wireCustom,
    scheduledAt: scheduled
  };
}
function hasIdempotencyKey(request) {
  return typeof request.idempotencyKey === "string" && request.idempotencyKey !== "";
}
function receivedTraceContext(trace) {
  if (trace === void 0 || traceparentProblem(trace.traceparent) !== void 0) return void 0;
  return trace.tracestate ? { traceparent: trace.traceparent, tracestate: trace.tracestate } : { traceparent: trace.traceparent };
}
function payloadFromWire(payload) {
  if (payload === void 0 || payload.data.length === 0) return void 0;
  return new Payload2(payload.data, payload.encoding);
}
function jobFieldsFromWire(job) {
  if (job.id === "") throw new DecodeError("missing field id");
  if (job.jobType === "") throw new DecodeError("missing field job_type");
  if (!(Number.isInteger(job.priority) && job.priority >= 0 && job.priority <= 9)) {
    throw new DecodeError(`priority ${job.priority} is out of range`);
  }
  return {
    id: job.id,
    queue: job.queue,
    jobType: job.jobType,
    priority: job.priority,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    enqueuedAt: requiredDate("enqueued_at", job.enqueuedAt),
    // A malformed schedule or trace context is dropped, not fatal: the job is still usable.
    scheduledAt: dateFromTimestamp(job.scheduledAt),
    custom: customFromWire(job.custom),
    traceContext: receivedTraceContext(job.traceContext),
    payload: payloadFromWire(job.payload)
  };
}
function reservedJobFromWire(job) {
  const { payload, ...fields } = jobFieldsFromWire(job);
  return { fields, payload, leaseExpiresAt: requiredDate("lease_expires_at", job.leaseExpiresAt) };
}
function rejectionFromWire(rejection) {
  const reason = rejection?.reason;
  if (reason === void 0) return { kind: "unknown" };
  switch (reason.$case) {
    case "unknownQueue":
      return { kind: "unknownQueue", queue: reason.value.queue };
    case "payloadTooLarge":
      return {
        kind: "payloadTooLarge",
        limit: Number(reason.value.limit),
        actual: Number(reason.value.actual)
      };
    case "encodingNotAllowed":
      return { kind: "encodingNotAllowed", encoding: reason.value.encoding, allowed: reason.value.allowed };
    case "jobTypeNotAllowed":
      return { kind: "jobTypeNotAllowed", jobType: reason.value.jobType, allowed: reason.value.allowed };
    case "customEntriesTooMany":
      return { kind: "customEntriesTooMany", limit: reason.value.limit, actual: reason.value.actual };
    case "customMapTooLarge":
      return {
        kind: "customMapTooLarge",
        limit: Number(reason.value.limit),
        actual: Number(reason.value.actual)
      };
    case "customKeyTooLong":
      return {
        kind: "customKeyTooLong",
        key: reason.value.key,
        limit: reason.value.limit,
        actual: Number(reason.value.actual)
      };
    case "queueNameTooLong":
      return { kind: "queueNameTooLong", limit: reason.value.limit, actual: Number(reason.value.actual) };
    case "jobTypeNameTooLong":
      return { kind: "jobTypeNameTooLong", limit: reason.value.limit, actual: Number(reason.value.actual) };
    case "idempotencyKeyTooLong":
      return {
        kind: "idempotencyKeyTooLong",
        limit: reason.value.limit,
        actual: Number(reason.value.actual)
      };
    case "scheduledTooFar":
      return {
        kind: "scheduledTooFar",
        horizon: msFromDuration(reason.value.horizon),
        actual: dateFromTimestamp(reason.value.actual) ?? /* @__PURE__ */ new Date(0)
      };
    case "invalidRequest":
      return { kind: "invalidRequest", message: reason.value.message };
    case "queueFull":
      return { kind: "queueFull", queue: reason.value.queue, limit: Number(reason.value.limit) };
    case "queueClosing":
      return { kind: "queueClosing", queue: reason.value.queue };
    default:
      return { kind: "unknown" };
  }
}
function serverInfoFromWire(info) {
  if (info.serverVersion === "") throw new DecodeError("missing field server_version");
  const serverTime = requiredDate("server_time", info.serverTime);
  return {
    version: info.serverVersion,
    supportedProtocolVersions: info.supportedProtocolVersions,
    serverTime,
    restrictsEncodings: info.restrictsEncodings,
    allowedEncodings: info.allowedEncodings,
    maxPayloadBytes: Number(info.maxPayloadBytes),
    maxCustomEntries: info.maxCustomEntries,
    maxCustomTotalBytes: Number(info.maxCustomTotalBytes),
    maxCustomKeyBytes: info.maxCustomKeyBytes,
    maxQueueNameBytes: info.maxQueueNameBytes,
    maxJobTypeBytes: info.maxJobTypeBytes,
    maxIdempotencyKeyBytes: info.maxIdempotencyKeyBytes,
    maxScheduleHorizon: msFromDuration(info.maxScheduleHorizon),
    maxEnqueueBatch: info.maxEnqueueBatch,
    maxReserveBatch: info.maxReserveBatch,
    maxReserveQueues: info.maxReserveQueues,
    maxWaitTimeout: msFromDuration(info.maxWaitTimeout),
    maxLeaseDuration: msFromDuration(info.maxLeaseDuration),
    strictQueues: info.strictQueues,
    deadLetterRetentionEnabled: info.deadLetterRetentionEnabled,
    features: [...info.features],
    maxConsumeCredits: info.maxConsumeCredits,
    ...info.cluster === void 0 ? {} : { cluster: clusterFromWire(info.cluster) }
  };
}
function clusterFromWire(cluster) {
  return {
    nodeId: Number(cluster.nodeId),
    role: cluster.role,
    term: Number(cluster.term),
    ...cluster.leaderId === void 0 ? {} : { leaderId: Number(cluster.leaderId) },
    leaderAddr: cluster.leaderAddr,
    ...cluster.lastAppliedIndex === void 0 ? {} : { lastAppliedIndex: Number(cluster.lastAppliedIndex) },
    members: cluster.members.map((member) => ({
      id: Number(member.id),
      addr: member.addr,
      voter: member.voter,
      ...member.replicationLag === void 0 ? {} : { replicationLag: Number(member.replicationLag) }
    }))
  };
}
var CAUSES = {
  [1 /* DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED */]: DeadLetterCause.AttemptsExhausted,
  [2 /* DEAD_LETTER_CAUSE_REJECTED */]: DeadLetterCause.Rejected,
  [3 /* DEAD_LETTER_CAUSE_LEASE_EXPIRED */]: DeadLetterCause.LeaseExpired,
  [4 /* DEAD_LETTER_CAUSE_ADMIN */]: DeadLetterCause.Admin,
  [5 /* DEAD_LETTER_CAUSE_CANCELLED */]: DeadLetterCause.Cancelled
};
function deadLetterFromWire(record) {
  if (record.job === void 0) throw new DecodeError("missing field job");
  const fields = jobFieldsFromWire(record.job);
  return new DeadLetterRecord2({
    queue: fields.queue,
    jobId: fields.id,
    jobType: fields.jobType,
    payload: fields.payload,
    priority: fields.priority,
    maxAttempts: fields.maxAttempts,
    custom: fields.custom,
    traceContext: fields.traceContext,
    enqueuedAt: fields.enqueuedAt,
    scheduledAt: fields.scheduledAt,
    cause: CAUSES[record.cause] ?? DeadLetterCause.Unspecified,
    failedAt: requiredDate("failed_at", record.failedAt),
    finalAttempt: record.finalAttempt,
    lastReason: record.lastReason
  });
}
var MAX_SCHEDULE_ID_BYTES = 128;
var MIN_EVERY_MS = 1e3;
var CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
function checkScheduleId(where, id) {
  if (typeof id !== "string") throw new ValidationError(`${where}: a schedule id must be a string`);
  if (id === "") throw new ValidationError(`${where}: a schedule id must not be empty`);
  const bytes = Buffer.byteLength(id, "utf8");
  if (bytes > MAX_SCHEDULE_ID_BYTES)
    throw new ValidationError(
      `${where}: a schedule id is at most ${MAX_SCHEDULE_ID_BYTES} bytes (got ${bytes})`
    );
  if (CONTROL.test(id))
    throw new ValidationError(`${where}: a schedule id must not contain control characters`);
  return id;
}
var OVERLAP_TO_WIRE = {
  [ScheduleOverlap.Skip]: 1 /* SCHEDULE_OVERLAP_SKIP */,
  [ScheduleOverlap.Allow]: 2 /* SCHEDULE_OVERLAP_ALLOW */
};
var CATCH_UP_TO_WIRE = {
  [ScheduleCatchUp.Latest]: 1 /* SCHEDULE_CATCH_UP_LATEST */,
  [ScheduleCatchUp.None]: 2 /* SCHEDULE_CATCH_UP_NONE */
};
function scheduleToWire(schedule, where) {
  if (typeof schedule !== "object" || schedule === null)
    throw new ValidationError(`${where}: a schedule must be an object`);
  const { id, job, cron, timeZone, every, overlap, catchUp } = schedule;
  checkScheduleId(where, id);
  if (cron === void 0 === (every === void 0))
    throw new ValidationError(`${where}: a schedule needs exactly one cadence: cron or every`);
  let cadence;
  if (cron !== void 0) {
    if (typeof cron !== "string" || cron.trim() === "")
      throw new ValidationError(`${where}: cron must be a non-empty cron expression`);
    if (timeZone !== void 0 && typeof timeZone !== "string")
      throw new ValidationError(`${where}: timeZone must be a string (an IANA time zone name)`);
    cadence = { $case: "cron", value: { expression: cron, timeZone: timeZone ?? "UTC" } };
  } else {
    if (timeZone !== void 0) throw new ValidationError(`${where}: timeZone goes with cron, not every`);
    checkMs(`${where}: every`, every, MIN_EVERY_MS);
    cadence = { $case: "every", value: durationFromMs(every) };
  }
  if (typeof job !== "object" || job === null) throw new ValidationError(`${where}: job must be an object`);
  for (const field of ["idempotencyKey", "scheduledAt", "traceContext"]) {
    if (job[field] !== void 0)
      throw new ValidationError(`${where}: a schedule's job must not set ${field}`);
  }
  const overlapWire = OVERLAP_TO_WIRE[overlap ?? ScheduleOverlap.Skip];
  if (overlapWire === void 0)
    throw new ValidationError(`${where}: overlap must be "skip" or "allow" (got ${String(overlap)})`);
  const catchUpWire = CATCH_UP_TO_WIRE[catchUp ?? ScheduleCatchUp.Latest];
  if (catchUpWire === void 0)
    throw new ValidationError(`${where}: catchUp must be "latest" or "none" (got ${String(catchUp)})`);
  return {
    id,
    cadence,
    job: enqueueRequestToWire(job, `${where}: job`, void 0),
    overlap: overlapWire,
    catchUp: catchUpWire
  };
}
var OVERLAP_FROM_WIRE = {
  [0 /* SCHEDULE_OVERLAP_UNSPECIFIED */]: ScheduleOverlap.Skip,
  [1 /* SCHEDULE_OVERLAP_SKIP */]: ScheduleOverlap.Skip,
  [2 /* SCHEDULE_OVERLAP_ALLOW */]: ScheduleOverlap.Allow
};
var CATCH_UP_FROM_WIRE = {
  [0 /* SCHEDULE_CATCH_UP_UNSPECIFIED */]: ScheduleCatchUp.Latest,
  [1 /* SCHEDULE_CATCH_UP_LATEST */]: ScheduleCatchUp.Latest,
  [2 /* SCHEDULE_CATCH_UP_NONE */]: ScheduleCatchUp.None
};
function scheduleJobFromWire(job) {
  const template = { queue: job.queue, jobType: job.jobType };
  const payload = payloadFromWire(job.payload);
  if (payload !== void 0) template.payload = payload;
  if (job.priority !== void 0) template.priority = job.priority;
  if (job.maxAttempts !== void 0) template.maxAttempts = job.maxAttempts;
  const custom = customFromWire(job.custom);
  if (Object.keys(custom).length > 0) template.custom = custom;
  return template;
}
function scheduleInfoFromWire(info) {
  const definition = info.definition;
  if (definition === void 0) throw new DecodeError("missing field definition");
  const id = definition.id;
  if (id === "") throw new DecodeError("missing field id");
  if (definition.job === void 0) throw new DecodeError(`schedule ${JSON.stringify(id)} has no job`);
  const overlap = OVERLAP_FROM_WIRE[definition.overlap];
  const catchUp = CATCH_UP_FROM_WIRE[definition.catchUp];
  if (overlap === void 0 || catchUp === void 0)
    throw new DecodeError(`schedule ${JSON.stringify(id)} has an unknown overlap or catch-up policy`);
  const job = scheduleJobFromWire(definition.job);
  const cadence = definition.cadence;
  let shown;
  if (cadence?.$case === "cron") {
    shown = {
      id,
      job,
      cron: cadence.value.expression,
      timeZone: cadence.value.timeZone || "UTC",
      overlap,
      catchUp
    };
  } else if (cadence?.$case === "every") {
    shown = { id, job, every: msFromDuration(cadence.value), overlap, catchUp };
  } else {
    throw new DecodeError(`schedule ${JSON.stringify(id)} has no cadence`);
  }
  const optionalDate = (field, timestamp) => timestamp === void 0 ? void 0 : requiredDate(field, timestamp);
  return {
    definition: shown,
    nextFireAt: optionalDate("next_fire_at", info.nextFireAt),
    lastSlotAt: optionalDate("last_slot_at", info.lastSlotAt),
    lastJobId: info.lastJobId,
    fired: Number(info.fired),
    createdAt: requiredDate("created_at", info.createdAt)
  };
}
function checkPauseQueue(where, queue) {
  if (typeof queue !== "string")
    throw new ValidationError(`${where}: queue must be a queue name or ALL_QUEUES (a string)`);
  return queue;
}
function pauseRequestToWire(queue, options, where) {
  checkPauseQueue(where, queue);
  if (typeof options !== "object" || options === null)
    throw new ValidationError(`${where}: options must be an object`);
  const { until, reason } = options;
  let stamp;
  if (until !== void 0) {
    if (!(until instanceof Date) || Number.isNaN(until.getTime()))
      throw new ValidationError(`${where}: until must be a valid Date`);
    stamp = timestampFromDate(until);
    if (stamp === void 0)
      throw new ValidationError(`${where}: until must be in the future (got ${until.toISOString()})`);
  }
  if (reason !== void 0 && typeof reason !== "string")
    throw new ValidationError(`${where}: reason must be a string`);
  return { queue, until: stamp, reason };
}
function pauseFromWire(pause2) {
  const until = pause2.until === void 0 ? void 0 : requiredDate("until", pause2.until);
  return { queue: pause2.queue, until };
}

// src/job.ts
var leases = /* @__PURE__ */ new WeakMap();
var JobCtx = class {
  id;
  queue;
  jobType;
  priority;
  /** 1 on the first delivery. */
  attempt;
  maxAttempts;
  enqueuedAt;
  scheduledAt;
  custom;
  /** The producer's trace context, when it sent a valid one. */
  traceContext;
  /** The worker id the job was reserved with, when one was given. */
  workerId;
  /**
   * Aborted by a Worker when it loses the job's lease (the reason is a `LeaseLostError`): the job
   * belongs to another attempt, so the handler should stop; its result is ignored. Also aborted when
   * the job was cancelled while the handler ran (the reason is a `LeaseLostError` whose `cause` is a
   * `JobCancelledError`).
   */
  signal;
  /** @internal Made by the client when it decodes a reserved job. */
  constructor(fields, lease) {
    this.id = fields.id;
    this.queue = fields.queue;
    this.jobType = fields.jobType;
    this.priority = fields.priority;
    this.attempt = fields.attempt;
    this.maxAttempts = fields.maxAttempts;
    this.enqueuedAt = fields.enqueuedAt;
    this.scheduledAt = fields.scheduledAt;
    this.custom = fields.custom;
    this.traceContext = fields.traceContext;
    this.workerId = lease.workerId;
    this.signal = lease.controller.signal;
    leases.set(this, lease);
  }
  /** When the lease ends, as last granted by the server (updated by every successful extend). */
  get leaseExpiresAt() {
    return leaseOf(this).expiresAt;
  }
  /** Extends the lease to now + `extensionMs` (the server may clamp it); resolves with the new expiry. */
  extend(extensionMs) {
    return leaseOf(this).extend(this, extensionMs);
  }
  toString() {
    return `job ${this.id} (${this.jobType} on ${this.queue}, attempt ${this.attempt})`;
  }
};
function leaseOf(ctx) {
  const lease = leases.get(ctx);
  if (lease === void 0) throw new TypeError("this JobCtx was not made by a sepp-js client");
  return lease;
}

// src/logger.ts
var silentLogger = {
  warn() {
  },
  error() {
  }
};

// src/otel.ts
import { createRequire } from "module";
var loaded;
function api() {
  if (loaded === void 0) {
    try {
      loaded = createRequire(import.meta.url)("@opentelemetry/api");
    } catch {
      loaded = null;
    }
  }
  return loaded;
}
var NO_SPAN = { setAttribute() {
}, fail() {
} };
var noopProvider;
function tracing(otel) {
  noopProvider ??= new otel.ProxyTracerProvider().getDelegate();
  const provider = otel.trace.getTracerProvider();
  const delegate = typeof provider.getDelegate === "function" ? provider.getDelegate() : provider;
  return delegate !== noopProvider;
}
function tracer(otel) {
  return otel.trace.getTracer("sepp-js", VERSION);
}
function settle(span, otel) {
  return {
    setAttribute: (key, value) => span.setAttribute(key, value),
    fail: (error) => {
      span.setStatus({
        code: otel.SpanStatusCode.ERROR,
        message: error instanceof Error ? error.message : String(error)
      });
      if (error instanceof Error) span.recordException(error);
    }
  };
}
function clean(attributes) {
  const out = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== void 0) out[key] = value;
  return out;
}
async function inClientSpan(name, attributes, call) {
  const otel = api();
  if (otel === null || !tracing(otel)) return call(NO_SPAN);
  const options = { kind: otel.SpanKind.CLIENT, attributes: clean(attributes) };
  return tracer(otel).startActiveSpan(name, options, async (span) => {
    const handle2 = settle(span, otel);
    try {
      return await call(handle2);
    } catch (error) {
      handle2.fail(error);
      throw error;
    } finally {
      span.end();
    }
  });
}
async function inProcessSpan(attributes, producer, call) {
  const otel = api();
  if (otel === null || !tracing(otel)) return call(NO_SPAN);
  const links = [];
  const parsed = producer === void 0 ? void 0 : parseTraceparent(producer.traceparent);
  if (parsed !== void 0) {
    const context = {
      traceId: parsed.traceId,
      spanId: parsed.spanId,
      traceFlags: parsed.flags,
      isRemote: true
    };
    if (producer?.tracestate) context.traceState = otel.createTraceState(producer.tracestate);
    links.push({ context });
  }
  const span = tracer(otel).startSpan("sepp.process", {
    kind: otel.SpanKind.CONSUMER,
    root: true,
    links,
    attributes: clean(attributes)
  });
  const handle2 = settle(span, otel);
  try {
    return await otel.context.with(otel.trace.setSpan(otel.context.active(), span), () => call(handle2));
  } finally {
    span.end();
  }
}
function activeTraceContext() {
  const otel = api();
  if (otel === null) return void 0;
  const span = otel.trace.getSpan(otel.context.active());
  if (span === void 0) return void 0;
  const context = span.spanContext();
  if (!otel.isSpanContextValid(context)) return void 0;
  const traceparent = formatTraceparent(context.traceId, context.spanId, context.traceFlags);
  const tracestate = context.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}
function injectTraceMetadata(metadata) {
  const trace = activeTraceContext();
  if (trace === void 0) return;
  metadata.set("traceparent", trace.traceparent);
  if (trace.tracestate) metadata.set("tracestate", trace.tracestate);
}

// src/pipeline.ts
import { status as Status5 } from "@grpc/grpc-js";
var MAX_JOBS_PER_CALL = 256;
var MAX_BYTES_PER_CALL = 4 * 1024 * 1024;
var MAX_CALLS_IN_FLIGHT = 4;
var EnqueuePipeline = class {
  #send;
  #maxCalls;
  #schedule;
  #lanes = {
    keyed: { keyed: true, inFlight: 0, flushScheduled: false, waiting: [] },
    keyless: { keyed: false, inFlight: 0, flushScheduled: false, waiting: [] }
  };
  constructor(send, maxCalls = MAX_CALLS_IN_FLIGHT, schedule = (flush) => setImmediate(flush)) {
    if (!Number.isInteger(maxCalls) || maxCalls < 1) throw new RangeError("maxCalls must be at least 1");
    this.#send = send;
    this.#maxCalls = maxCalls;
    this.#schedule = schedule;
  }
  /**
   * The results of `count` jobs encoded as one `EnqueueBatchRequest`, in order. Rejects with what
   * the call carrying them rejected with.
   */
  submit(encoded, count, keyed) {
    const lane = keyed ? this.#lanes.keyed : this.#lanes.keyless;
    return new Promise((resolve, reject) => {
      lane.waiting.push({ encoded, count, resolve, reject });
      if (!lane.flushScheduled) {
        lane.flushScheduled = true;
        this.#schedule(() => {
          lane.flushScheduled = false;
          this.#flush(lane);
        });
      }
    });
  }
  #flush(lane) {
    while (lane.waiting.length > 0 && lane.inFlight < this.#maxCalls) {
      const group = takeGroup(lane.waiting);
      lane.inFlight++;
      void this.#deliver(lane.keyed, group).finally(() => {
        lane.inFlight--;
        this.#flush(lane);
      });
    }
  }
  async #deliver(keyed, group) {
    const total = group.reduce((sum, waiting) => sum + waiting.count, 0);
    const request = group.length === 1 ? group[0].encoded : Buffer.concat(group.map((w) => w.encoded));
    let response;
    try {
      response = await this.#send(request, keyed);
    } catch (error) {
      if (group.length > 1 && error?.code === Status5.INVALID_ARGUMENT) {
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
};
function takeGroup(waiting) {
  const first = waiting[0];
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

// src/retry.ts
import { status as Status6 } from "@grpc/grpc-js";
var FAILOVER_MAX_BACKOFF_MS = 1e3;
var RetryPolicy = class {
  maxAttempts;
  initialBackoff;
  maxBackoff;
  multiplier;
  jitter;
  failoverWindow;
  constructor(options = {}) {
    const attempts = options.maxAttempts ?? 1;
    if (!Number.isFinite(attempts))
      throw new ValidationError("retryPolicy.maxAttempts must be a finite number");
    this.maxAttempts = Math.max(1, Math.floor(attempts));
    this.initialBackoff = milliseconds("retryPolicy.initialBackoff", options.initialBackoff ?? 100);
    this.maxBackoff = milliseconds("retryPolicy.maxBackoff", options.maxBackoff ?? 1e4);
    const multiplier = options.multiplier ?? 2;
    this.multiplier = multiplier >= 1 ? multiplier : 1;
    this.jitter = options.jitter ?? true;
    this.failoverWindow = milliseconds("retryPolicy.failoverWindow", options.failoverWindow ?? 15e3);
  }
  /** The sleep before a retry whose backoff is `backoff`, given a uniform random number in [0, 1). */
  delay(backoff, random) {
    if (!this.jitter) return backoff;
    return backoff * (0.5 + 0.5 * Math.min(Math.max(random, 0), 1));
  }
  /** The backoff that follows `backoff`. */
  nextBackoff(backoff) {
    return Math.min(backoff * this.multiplier, this.maxBackoff);
  }
  /** The backoff before the first retry. */
  firstBackoff() {
    return Math.min(this.initialBackoff, this.maxBackoff);
  }
};
function milliseconds(name, value) {
  if (!Number.isFinite(value) || value < 0) {
    throw new ValidationError(`${name} must be a non-negative number of milliseconds (got ${value})`);
  }
  return value;
}
var RetryDirective = class _RetryDirective {
  constructor(kind, delay) {
    this.kind = kind;
    this.delay = delay;
  }
  kind;
  delay;
  static DEFAULT = new _RetryDirective("default");
  static DEAD_LETTER = new _RetryDirective("deadLetter");
  /** Retry under the queue's retry policy (or dead-letter the job if this was its last attempt). */
  static default() {
    return _RetryDirective.DEFAULT;
  }
  /** Retry after `delayMs` (capped by the server's schedule horizon), or dead-letter after the last attempt. */
  static after(delayMs) {
    return new _RetryDirective("after", milliseconds("RetryDirective.after delay", delayMs));
  }
  /** Dead-letter the job now, whatever attempts it has left. */
  static deadLetter() {
    return _RetryDirective.DEAD_LETTER;
  }
  toString() {
    return this.kind === "after" ? `after ${this.delay} ms` : this.kind;
  }
};
function retryAllows(scope, code) {
  if (scope === "reserve") return false;
  if (code === Status6.UNAVAILABLE || code === Status6.RESOURCE_EXHAUSTED) return true;
  return scope === "transient" && (code === Status6.DEADLINE_EXCEEDED || code === Status6.ABORTED);
}
function ridesFailover(scope, code) {
  if (scope === "reserve") return code === Status6.UNAVAILABLE;
  return code !== Status6.RESOURCE_EXHAUSTED && retryAllows(scope, code);
}
async function withRetries(policy, operation, scope, logger, call, random = Math.random, sleep = defaultSleep, inCluster = () => false, now = Date.now) {
  let backoff = policy.firstBackoff();
  let failoverBackoff = Math.min(policy.initialBackoff, FAILOVER_MAX_BACKOFF_MS);
  let failoverEnds;
  for (let attempt = 1; ; attempt++) {
    try {
      return { ok: true, value: await call(), attempts: attempt };
    } catch (error) {
      const code = error.code;
      if (typeof code !== "number") return { ok: false, error, attempts: attempt };
      let delay;
      if (attempt < policy.maxAttempts && retryAllows(scope, code)) {
        delay = policy.delay(backoff, random());
        backoff = policy.nextBackoff(backoff);
        logger.warn("retrying sepp call after a transient failure", {
          operation,
          attempt,
          code: Status6[code],
          message: error.details,
          delayMs: Math.round(delay)
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
          code: Status6[code],
          message: error.details,
          delayMs: Math.round(delay)
        });
      } else {
        return { ok: false, error, attempts: attempt };
      }
      await sleep(delay);
    }
  }
}
function defaultSleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// src/client.ts
var RESERVE_DEADLINE_SLACK_MS = 1e4;
var DEFAULT_WAIT_TIMEOUT_MS = 3e4;
var Q = QueueServiceService;
var ENCODED_ENQUEUE_BATCH = {
  path: Q.enqueueBatch.path,
  requestSerialize: (value) => value,
  responseDeserialize: Q.enqueueBatch.responseDeserialize
};
var SeppClient = class _SeppClient {
  /** The retry policy of enqueue, cancel, the schedule and pause calls, ack, nack, extend and getServerInfo. */
  retryPolicy;
  /** The deadline of every call except reserve, in ms. */
  rpcTimeout;
  /** Where the client's diagnostics go (the Worker's too, unless it is given its own). */
  logger;
  /** The connection calls go to: the configured address, or the cluster leader it redirected to. */
  #connections;
  #authorization;
  /** Whether calls carry `sepp-follow-leader` (the `followLeader` option). */
  #followLeader;
  /** The ack coalescing pipeline, unless `coalesceAcks` is false. */
  #acks;
  /** The enqueue coalescing pipeline, unless `coalesceEnqueues` is false. */
  #enqueues;
  /** The metadata every call carries: the API key, and `sepp-follow-leader` unless turned off. */
  #metadata() {
    const metadata = new grpc2.Metadata();
    if (this.#authorization !== void 0) metadata.set("authorization", this.#authorization);
    if (this.#followLeader) metadata.set("sepp-follow-leader", "1");
    return metadata;
  }
  constructor(connections, options, authorization, rpcTimeout) {
    this.#connections = connections;
    this.#authorization = authorization;
    this.#followLeader = options.followLeader !== false;
    this.retryPolicy = options.retryPolicy ?? new RetryPolicy();
    this.rpcTimeout = rpcTimeout;
    this.logger = options.logger ?? silentLogger;
    this.#acks = options.coalesceAcks === false ? void 0 : new AckPipeline(
      (request) => this.#call(Q.ack, request, this.rpcTimeout, void 0),
      (request) => this.#call(Q.ackBatch, request, this.rpcTimeout, void 0)
    );
    this.#enqueues = options.coalesceEnqueues === false ? void 0 : new EnqueuePipeline(async (encoded, keyed) => {
      const outcome = await this.#withRetries(
        "enqueue",
        keyed ? "transient" : "keylessEnqueue",
        () => this.#call(ENCODED_ENQUEUE_BATCH, encoded, this.rpcTimeout, void 0)
      );
      if (outcome.ok) return outcome.value;
      throw outcome.error;
    });
  }
  /**
   * Connects to `addr` (`host:port`, `http://host:port` or `https://host:port`) and resolves once the
   * connection is up; rejects with a `ConnectError` (or `InvalidApiKeyError`, `ValidationError`).
   */
  static async connect(addr, options = {}) {
    const tlsRequested = options.tls === true || options.tlsCaCert !== void 0 || options.tlsDomain !== void 0;
    const { target, tls } = parseAddress(addr, tlsRequested);
    const authorization = options.apiKey === void 0 ? void 0 : authorizationHeader(options.apiKey);
    const logger = options.logger ?? silentLogger;
    const timeout = checkMs("connectTimeout", options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_MS, 1);
    const rpcTimeout = checkMs("rpcTimeout", options.rpcTimeout ?? DEFAULT_RPC_TIMEOUT_MS, 1);
    if (options.retryPolicy !== void 0 && !(options.retryPolicy instanceof RetryPolicy)) {
      throw new ValidationError("retryPolicy must be a RetryPolicy");
    }
    if (options.coalesceAcks !== void 0 && typeof options.coalesceAcks !== "boolean") {
      throw new ValidationError("coalesceAcks must be a boolean");
    }
    if (options.coalesceEnqueues !== void 0 && typeof options.coalesceEnqueues !== "boolean") {
      throw new ValidationError("coalesceEnqueues must be a boolean");
    }
    if (options.followLeader !== void 0 && typeof options.followLeader !== "boolean") {
      throw new ValidationError("followLeader must be a boolean");
    }
    const settings = channelOptions(options);
    let channelCredentials;
    try {
      channelCredentials = credentials2(tls, options);
    } catch (error) {
      throw new ConnectError(addr, `unusable TLS settings: ${error.message}`);
    }
    if (authorization !== void 0 && !tls) {
      logger.warn("API key configured without TLS; it will be sent to the server in plaintext", { addr });
    }
    const dial = (to) => new grpc2.Client(to, channelCredentials, settings);
    const channel = dial(target);
    const connections = new Connections(target, channel, dial, logger);
    const client = new _SeppClient(connections, options, authorization, rpcTimeout);
    try {
      await connectChannel(channel, addr, timeout);
    } catch (error) {
      channel.close();
      logger.error("could not connect to the sepp server", { addr, error: String(error) });
      throw error;
    }
    logger.info?.("connected to the sepp server", { addr, tls, auth: authorization !== void 0 });
    return client;
  }
  /** Closes the connection (every one, after redirects); calls in flight fail with a `TransportError`. */
  close() {
    this.#connections.close();
  }
  // ---- producer ----
  /** Enqueues one job; a rejection throws `JobRejectedError`. */
  async enqueue(job) {
    const [result] = await this.#enqueueBatch([job], "enqueue");
    if (result === void 0) throw new BatchResultCountMismatchError(1, 0);
    if ("kind" in result) throw new JobRejectedError(result);
    return result;
  }
  /**
   * Enqueues jobs, each accepted or rejected on its own: one result per job, in order, where a
   * rejection is a value (narrow with `isJobRejection`). An empty batch throws `EmptyBatchError`.
   */
  enqueueBatch(jobs) {
    return this.#enqueueBatch(jobs, void 0);
  }
  async #enqueueBatch(jobs, single) {
    const { request, scope } = batchRequest(jobs, single);
    return inClientSpan("sepp.enqueue", { "sepp.jobs": jobs.length }, async () => {
      const results = await this.#enqueueResults(request, scope, jobs.length);
      return results.map((result) => {
        const outcome = result.outcome;
        if (outcome === void 0)
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
  async #enqueueResults(request, scope, count) {
    const pipeline = this.#enqueues;
    let results;
    if (pipeline === void 0 || activeTraceContext() !== void 0) {
      results = (await this.#unary("enqueue", Q.enqueueBatch, request(), scope, this.rpcTimeout)).results;
    } else {
      const encoded = Buffer.from(EnqueueBatchRequest.encode(request()).finish());
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
  async enqueueAtomic(jobs) {
    const { request, scope } = batchRequest(jobs, void 0);
    return inClientSpan("sepp.enqueue_atomic", { "sepp.jobs": jobs.length }, async () => {
      const response = await this.#unary(
        "enqueue_atomic",
        Q.enqueueAtomic,
        request(),
        scope,
        this.rpcTimeout
      );
      const outcome = response.outcome;
      if (outcome === void 0) {
        throw new MalformedResponseError("malformed response: missing outcome in atomic enqueue response");
      }
      if (outcome.$case === "rejection") {
        throw new BatchValidationError(
          outcome.value.errors.map((error) => ({
            index: error.index,
            rejection: rejectionFromWire(error.rejection)
          }))
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
  async cancel(jobId, options = {}) {
    if (typeof jobId !== "string") throw new ValidationError("cancel: jobId must be a string");
    const reason = options.reason;
    if (reason !== void 0 && typeof reason !== "string")
      throw new ValidationError("cancel: reason must be a string");
    const request = { jobId, reason };
    return inClientSpan("sepp.cancel", { "sepp.job_id": jobId }, async () => {
      const response = await this.#unary(
        "cancel",
        Q.cancelJob,
        request,
        "transient",
        this.rpcTimeout,
        cancelErrorFromStatus
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
  async upsertSchedule(schedule) {
    const definition = scheduleToWire(schedule, "upsertSchedule");
    return inClientSpan("sepp.upsert_schedule", { "sepp.schedule.id": definition.id }, async () => {
      const response = await this.#unary(
        "upsert_schedule",
        Q.upsertSchedule,
        { schedule: definition },
        "transient",
        this.rpcTimeout,
        scheduleErrorFromStatus
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
  async deleteSchedule(id) {
    checkScheduleId("deleteSchedule", id);
    return inClientSpan("sepp.delete_schedule", { "sepp.schedule.id": id }, async () => {
      const response = await this.#unary(
        "delete_schedule",
        Q.deleteSchedule,
        { id },
        "transient",
        this.rpcTimeout,
        scheduleErrorFromStatus
      );
      return response.deleted;
    });
  }
  /**
   * Every schedule the server keeps, sorted by id. One this client cannot read (say, with a cadence
   * of a newer server) is skipped with a warning, as drainDeadLetters does with a malformed record.
   */
  async listSchedules() {
    return inClientSpan("sepp.list_schedules", {}, async () => {
      const response = await this.#unary(
        "list_schedules",
        Q.listSchedules,
        {},
        "transient",
        this.rpcTimeout,
        scheduleErrorFromStatus
      );
      const schedules = [];
      for (const info of response.schedules) {
        try {
          schedules.push(scheduleInfoFromWire(info));
        } catch (error) {
          if (!(error instanceof DecodeError)) throw error;
          this.logger.warn("skipping a schedule this client cannot read", {
            scheduleId: info.definition?.id,
            error: error.message
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
  async pauseQueue(queue, options = {}) {
    const request = pauseRequestToWire(queue, options, "pauseQueue");
    return inClientSpan("sepp.pause_queue", { "sepp.queue": queue }, async () => {
      const response = await this.#unary(
        "pause_queue",
        Q.pauseQueue,
        request,
        "transient",
        this.rpcTimeout,
        errorFromStatus
      );
      if (response.pause === void 0)
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
  async resumeQueue(queue) {
    checkPauseQueue("resumeQueue", queue);
    return inClientSpan("sepp.resume_queue", { "sepp.queue": queue }, async () => {
      const response = await this.#unary(
        "resume_queue",
        Q.resumeQueue,
        { queue },
        "transient",
        this.rpcTimeout,
        errorFromStatus
      );
      return response.resumed;
    });
  }
  /**
   * Every pause the server keeps: the pause of every queue first, then by queue name. The server lifts
   * a pause by itself once its `until` has passed; it is listed no more. One this client cannot read
   * is skipped with a warning, as listSchedules does.
   */
  async listPauses() {
    return inClientSpan("sepp.list_pauses", {}, async () => {
      const response = await this.#unary(
        "list_pauses",
        Q.listPauses,
        {},
        "transient",
        this.rpcTimeout,
        errorFromStatus
      );
      const pauses = [];
      for (const pause2 of response.pauses) {
        try {
          pauses.push(pauseFromWire(pause2));
        } catch (error) {
          if (!(error instanceof DecodeError)) throw error;
          this.logger.warn("skipping a pause this client cannot read", {
            queue: pause2.queue,
            error: error.message
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
  async reserve(options) {
    const request = reserveRequest(options);
    const wait = options.waitTimeout ?? DEFAULT_WAIT_TIMEOUT_MS;
    const attributes = { "sepp.queues": options.queues.join(","), "sepp.worker_id": options.workerId };
    return inClientSpan("sepp.reserve", attributes, async (span) => {
      const outcome = await this.#withRetries(
        "reserve",
        "reserve",
        () => this.#call(Q.reserve, request, wait + RESERVE_DEADLINE_SLACK_MS, options.signal)
      );
      if (!outcome.ok) throw mapped(outcome.error, reserveErrorFromStatus);
      const jobs = this.#jobsFromWire(outcome.value.jobs, options.workerId, void 0, "reserve response");
      span.setAttribute("sepp.jobs", jobs.length);
      return jobs.length > 0 ? jobs : null;
    });
  }
  /** Leased jobs as the application sees them; malformed ones are skipped with a warning. */
  #jobsFromWire(wireJobs, workerId, route, where) {
    const jobs = [];
    for (const job of wireJobs) {
      try {
        const { fields, payload, leaseExpiresAt } = reservedJobFromWire(job);
        const lease = {
          expiresAt: leaseExpiresAt,
          workerId,
          controller: new AbortController(),
          extend: (ctx, extension) => this.extend(ctx, extension),
          route
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
  openConsume(options, events) {
    const connection = this.#connections.current;
    const metadata = this.#metadata();
    connection.begin();
    let call;
    try {
      call = connection.grpc.makeBidiStreamRequest(
        Q.consume.path,
        Q.consume.requestSerialize,
        Q.consume.responseDeserialize,
        metadata,
        {}
      );
    } catch (error) {
      connection.end();
      throw error;
    }
    let session;
    session = new ConsumeSession(
      call,
      {
        queues: [...options.queues],
        leaseDuration: durationFromMs(options.leaseDuration),
        workerId: options.workerId
      },
      options.credits,
      { maxCredits: options.maxCredits, maxSettles: options.maxSettles },
      {
        jobs: (pushed) => {
          const jobs = this.#jobsFromWire(pushed, options.workerId, session, "Consume stream");
          session?.grant(pushed.length - jobs.length);
          events.jobs(jobs);
        },
        cancelled: (ids) => events.cancelled(ids)
      }
    );
    const ended = session.ended.then((end) => {
      connection.end();
      let redirected = false;
      const leader = leaderFrom(end.status);
      if (leader !== void 0) {
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
  async ack(ctx) {
    const request = { jobId: ctx.id, attempt: ctx.attempt, workerId: ctx.workerId };
    await inClientSpan("sepp.ack", leaseAttributes(ctx), () => {
      const route = leaseOf(ctx).route;
      if (route !== void 0)
        return this.#leaseAttempts(
          "ack",
          viaStream(
            route,
            { $case: "ack", value: request },
            () => this.#call(Q.ack, request, this.rpcTimeout, void 0)
          )
        );
      const acks = this.#acks;
      if (acks === void 0 || activeTraceContext() !== void 0)
        return this.#leaseCall("ack", Q.ack, request);
      let first = true;
      return this.#leaseAttempts("ack", () => {
        if (!first) return this.#call(Q.ack, request, this.rpcTimeout, void 0);
        first = false;
        return acks.submit(request);
      });
    });
  }
  /**
   * Fails a job: it is retried as `retry` says (default: the queue's policy), or dead-lettered after
   * its last attempt, with `reason` recorded. Resolves with whether the job was dead-lettered.
   */
  async nack(ctx, options = {}) {
    const retry = options.retry ?? RetryDirective.default();
    if (!(retry instanceof RetryDirective)) throw new ValidationError("nack: retry must be a RetryDirective");
    const reason = options.reason;
    if (reason !== void 0 && typeof reason !== "string")
      throw new ValidationError("nack: reason must be a string");
    const request = {
      jobId: ctx.id,
      attempt: ctx.attempt,
      reason: reason ? reason : void 0,
      retry: { strategy: nackStrategy(retry) },
      workerId: ctx.workerId
    };
    const attributes = { ...leaseAttributes(ctx), "sepp.retry": retry.toString() };
    const route = leaseOf(ctx).route;
    const response = await inClientSpan(
      "sepp.nack",
      attributes,
      () => route === void 0 ? this.#leaseCall("nack", Q.nack, request) : this.#leaseAttempts(
        "nack",
        viaStream(
          route,
          { $case: "nack", value: request },
          () => this.#call(Q.nack, request, this.rpcTimeout, void 0)
        )
      )
    );
    return response.deadLettered;
  }
  /**
   * Moves the job's lease deadline to now + `extensionMs` (the server may clamp it) and resolves with
   * the new deadline, which `ctx.leaseExpiresAt` reflects from then on.
   */
  async extend(ctx, extensionMs) {
    checkMs("extend: extensionMs", extensionMs, 1);
    const request = {
      jobId: ctx.id,
      attempt: ctx.attempt,
      leaseDuration: durationFromMs(extensionMs),
      workerId: ctx.workerId
    };
    return inClientSpan("sepp.extend", leaseAttributes(ctx), async () => {
      const route = leaseOf(ctx).route;
      const response = route === void 0 ? await this.#leaseCall("extend", Q.extend, request) : await this.#leaseAttempts(
        "extend",
        viaStream(
          route,
          { $case: "extend", value: request },
          () => this.#call(Q.extend, request, this.rpcTimeout, void 0)
        )
      );
      const expiry = dateFromTimestamp(response.leaseExpiresAt);
      if (expiry === void 0)
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
  async getServerInfo() {
    return inClientSpan("sepp.get_server_info", {}, async () => {
      const response = await this.#unary(
        "get_server_info",
        Q.getServerInfo,
        {},
        "transient",
        this.rpcTimeout
      );
      let info;
      try {
        info = serverInfoFromWire(response);
      } catch (error) {
        throw new MalformedResponseError(`malformed server info: ${error.message}`);
      }
      if (info.cluster !== void 0)
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
  async drainDeadLetters(options = {}) {
    const max = checkCount("drainDeadLetters: max", options.max ?? 1, 0);
    const queue = options.queue;
    if (queue !== void 0 && typeof queue !== "string")
      throw new ValidationError("drainDeadLetters: queue must be a string");
    if (max === 0) return [];
    return inClientSpan("sepp.drain_dead_letters", { "sepp.queue": queue, "sepp.max": max }, async (span) => {
      let response;
      try {
        response = await this.#call(Q.drainDeadLetters, { queue, max }, this.rpcTimeout, void 0);
      } catch (error) {
        throw mapped(error, errorFromStatus);
      }
      const records = [];
      for (const record of response.records) {
        try {
          records.push(deadLetterFromWire(record));
        } catch (error) {
          if (!(error instanceof DecodeError)) throw error;
          this.logger.warn("skipping malformed dead-letter record", {
            jobId: record.job?.id,
            error: error.message
          });
        }
      }
      span.setAttribute("sepp.drained", records.length);
      return records;
    });
  }
  // ---- plumbing ----
  /** An ack, nack or extend: retried under the policy, its failure mapped to a lease error. */
  #leaseCall(operation, method, request) {
    return this.#leaseAttempts(operation, () => this.#call(method, request, this.rpcTimeout, void 0));
  }
  /** Attempts of an ack, nack or extend under the retry policy, the failure mapped to a lease error. */
  async #leaseAttempts(operation, attempt) {
    const outcome = await this.#withRetries(operation, "transient", attempt);
    if (outcome.ok) return outcome.value;
    const error = mapped(outcome.error, leaseErrorFromStatus);
    if (outcome.attempts > 1 && error instanceof JobNotFoundError) {
      this.logger.warn(
        "job not found after a retried call: an earlier attempt may have succeeded and only its answer was lost",
        { operation, attempts: outcome.attempts }
      );
    }
    throw error;
  }
  /** A call retried under the policy within `scope`, its failure mapped to a client error. */
  async #unary(operation, method, request, scope, deadlineMs, map = errorFromStatus) {
    const outcome = await this.#withRetries(
      operation,
      scope,
      () => this.#call(method, request, deadlineMs, void 0)
    );
    if (outcome.ok) return outcome.value;
    throw mapped(outcome.error, map);
  }
  /** `call` under the retry policy, riding a failover once the client knows it talks to a cluster. */
  #withRetries(operation, scope, call) {
    const inCluster = () => this.#connections.inCluster;
    return withRetries(
      this.retryPolicy,
      operation,
      scope,
      this.logger,
      call,
      Math.random,
      void 0,
      inCluster
    );
  }
  /**
   * One attempt of a call: rejects with the grpc-js status error. A cluster follower's UNAVAILABLE
   * naming the leader (`sepp-leader`) switches the client to the leader and re-sends the call at
   * once, up to MAX_REDIRECTS times, within the same deadline: the follower executed nothing, so this
   * is no retry and holds for every call. An UNAVAILABLE naming no leader from a followed leader
   * sends the next attempt (the retry policy's, or the next call) back to the configured address.
   */
  async #call(method, request, deadlineMs, signal) {
    const deadline = Date.now() + deadlineMs;
    const operation = method.path.slice(method.path.lastIndexOf("/") + 1);
    for (let redirects = 0; ; redirects++) {
      const connection = this.#connections.current;
      try {
        return await this.#send(connection, method, request, deadline, signal);
      } catch (error) {
        const leader = leaderFrom(error);
        if (leader !== void 0) {
          this.#connections.learnedCluster([]);
          if (redirects < MAX_REDIRECTS) {
            if (this.#connections.follow(connection, leader, operation)) continue;
            throw error;
          }
          this.logger.warn(`giving up on following the cluster leader after ${MAX_REDIRECTS} redirects`, {
            operation,
            addr: connection.target,
            leader
          });
        } else if (isLeaderless(error)) {
          this.#connections.lost(connection, operation);
        }
        throw error;
      }
    }
  }
  /** One call on `connection`: rejects with the grpc-js status error. */
  #send(connection, method, request, deadline, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject({ code: grpc2.status.CANCELLED, details: "cancelled by the caller" });
        return;
      }
      const metadata = this.#metadata();
      injectTraceMetadata(metadata);
      let call;
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
            else if (response === void 0)
              reject({ code: grpc2.status.INTERNAL, details: "empty response" });
            else resolve(response);
          }
        );
      } catch (error) {
        connection.end();
        reject({
          code: grpc2.status.CANCELLED,
          details: `the client is closed (${error.message})`
        });
        return;
      }
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
};
function batchRequest(jobs, single) {
  if (!Array.isArray(jobs)) throw new ValidationError("an enqueue batch must be an array of jobs");
  if (jobs.length === 0) throw new EmptyBatchError();
  const scope = jobs.every(hasIdempotencyKey) ? "transient" : "keylessEnqueue";
  const request = () => {
    const active = activeTraceContext();
    return {
      jobs: jobs.map((job, index) => enqueueRequestToWire(job, single ?? `job ${index}`, active))
    };
  };
  return { request, scope };
}
function reserveRequest(options) {
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
  if (maxJobs !== void 0) checkCount("reserve: maxJobs", maxJobs, 1);
  if (workerId !== void 0 && (typeof workerId !== "string" || workerId === "")) {
    throw new ValidationError("reserve: workerId must not be empty");
  }
  return {
    queues: [...queues],
    waitTimeout: wait > 0 ? durationFromMs(wait) : void 0,
    leaseDuration: durationFromMs(leaseDuration),
    workerId,
    maxJobs
  };
}
function viaStream(route, op, plain) {
  let first = true;
  return async () => {
    if (!first) return plain();
    first = false;
    const sent = route.settle(op);
    if (sent === void 0) return plain();
    let outcome;
    try {
      outcome = await sent;
    } catch (error) {
      if (error instanceof NotSentError) return plain();
      throw error;
    }
    if (outcome.$case !== op.$case)
      throw new MalformedResponseError(`malformed response: a ${op.$case} answered as a ${outcome.$case}`);
    return outcome.value;
  };
}
function nackStrategy(retry) {
  switch (retry.kind) {
    case "default":
      return { $case: "default", value: {} };
    case "after":
      return { $case: "delay", value: durationFromMs(retry.delay ?? 0) };
    case "deadLetter":
      return { $case: "deadLetter", value: {} };
  }
}
function ackFromWire(response) {
  return { jobId: response.jobId, deduplicated: response.deduplicated };
}
function leaseAttributes(ctx) {
  return { "sepp.job_id": ctx.id, "sepp.attempt": ctx.attempt, "sepp.worker_id": ctx.workerId };
}
function mapped(error, map) {
  const code = error?.code;
  if (typeof code === "number" && typeof error.details === "string") {
    const result = map(error);
    if (error instanceof Error) Object.defineProperty(result, "cause", { value: error, configurable: true });
    return result;
  }
  return error;
}

// src/worker/handler-error.ts
var BRAND = /* @__PURE__ */ Symbol.for("sepp-js.HandlerError");
var HandlerError = class _HandlerError extends SeppError {
  constructor(kind, reason, delay) {
    super(kind === "retryAfter" ? `retry after ${delay} ms: ${reason}` : `${kind}: ${reason}`);
    this.kind = kind;
    this.reason = reason;
    this.delay = delay;
  }
  kind;
  reason;
  delay;
  name = "HandlerError";
  [BRAND] = true;
  /** Nack for a retry under the queue's retry policy. */
  static retry(reason) {
    return new _HandlerError("retry", String(reason));
  }
  /** Nack for a retry after `delayMs`. */
  static retryAfter(reason, delayMs) {
    return new _HandlerError("retryAfter", String(reason), checkMs("HandlerError.retryAfter delay", delayMs));
  }
  /** Nack to the dead-letter store, whatever attempts are left. */
  static permanent(reason) {
    return new _HandlerError("permanent", String(reason));
  }
  /** Whether `error` is a HandlerError, also across copies of this package (ESM and CJS). */
  static is(error) {
    return typeof error === "object" && error !== null && error[BRAND] === true;
  }
};

// src/worker/policy.ts
import { randomBytes } from "crypto";
import { hostname } from "os";
var MAX_FAILURE_BACKOFF_MS = 6e4;
var MIN_HEARTBEAT_MS = 1;
var EARLY_EMPTY_THRESHOLD_MS = 100;
var EARLY_EMPTY_PAUSE_MS = 250;
function failureBackoff(attempt) {
  const seconds = 2 ** Math.max(0, attempt);
  return RetryDirective.after(Math.min(seconds * 1e3, MAX_FAILURE_BACKOFF_MS));
}
function handlerVerdict(error) {
  switch (error.kind) {
    case "retry":
      return { retry: RetryDirective.default(), reason: error.reason };
    case "retryAfter":
      return { retry: RetryDirective.after(error.delay ?? 0), reason: error.reason };
    case "permanent":
      return { retry: RetryDirective.deadLetter(), reason: error.reason };
  }
}
function heartbeatInterval(fixedMs, knownExpiryMs, nowMs) {
  const interval = fixedMs ?? Math.max(0, knownExpiryMs - nowMs) / 3;
  return Math.max(interval, MIN_HEARTBEAT_MS);
}
function reserveBatch(maxJobs, freeSlots) {
  const capacity = freeSlots + 1;
  return maxJobs === void 0 ? capacity : Math.min(maxJobs, capacity);
}
function isEarlyEmpty(elapsedMs, waitTimeoutMs) {
  return elapsedMs < Math.min(EARLY_EMPTY_THRESHOLD_MS, waitTimeoutMs / 2);
}
function defaultWorkerId(env = process.env) {
  const host = env.HOSTNAME || env.COMPUTERNAME || hostname() || "unknown-host";
  return `${host}-${process.pid}-${randomBytes(4).toString("hex")}`;
}

// src/worker/process.ts
async function processJob(shared, job, hooks = {}) {
  const { ctx } = job;
  const attributes = {
    "sepp.job_id": ctx.id,
    "sepp.job_type": ctx.jobType,
    "sepp.queue": ctx.queue,
    "sepp.attempt": ctx.attempt,
    "sepp.worker_id": ctx.workerId
  };
  try {
    await inProcessSpan(attributes, ctx.traceContext, (span) => handle(shared, job, span, hooks));
  } catch (error) {
    shared.logger.error("unexpected failure while processing a job", {
      job: String(ctx),
      error: String(error)
    });
  }
}
async function handle(shared, { payload, ctx }, span, hooks) {
  const handler = shared.handlers.get(ctx.jobType) ?? shared.catchAll;
  if (handler === void 0) {
    hooks.handlerDone?.();
    const retry = failureBackoff(ctx.attempt);
    shared.logger.warn(`no handler registered for job_type ${ctx.jobType}; nacking`, {
      job: String(ctx),
      retry: retry.toString()
    });
    span.fail(new Error("no handler registered for job_type"));
    await settleNack(shared, ctx, retry, "no handler registered for job_type");
    return;
  }
  const run = Promise.resolve().then(() => handler(payload, ctx)).then(
    () => ({ kind: "returned" }),
    (error) => ({ kind: "threw", error })
  );
  const pushed = hooks.cancelled?.then((error) => ({
    kind: "leaseLost",
    error,
    cancelled: true,
    pushed: true
  }));
  const watched = shared.autoExtend === void 0 ? run : supervise(shared, ctx, run);
  const ending = await (pushed === void 0 ? watched : Promise.race([watched, pushed]));
  const finalized = ending.kind === "leaseLost" && ending.pushed ? finalizeCancel(shared, ctx) : void 0;
  if (ending.kind === "leaseLost") await run;
  hooks.handlerDone?.();
  switch (ending.kind) {
    case "leaseLost":
      span.fail(ending.error);
      if (ending.cancelled) {
        shared.logger.warn("job cancelled; handler aborted (the job is dead-lettered, not acked or nacked)", {
          job: String(ctx),
          error: String(ending.error)
        });
      } else {
        shared.logger.error("lease lost; handler aborted (the job is neither acked nor nacked)", {
          job: String(ctx),
          error: String(ending.error)
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
          `handler threw: ${message}`.slice(0, 1024)
        );
      }
      return;
    }
  }
}
async function finalizeCancel(shared, ctx) {
  try {
    await shared.client.extend(ctx, shared.leaseDuration);
    shared.logger.warn("the server named a job cancelled, but its lease could still be extended", {
      job: String(ctx)
    });
  } catch (error) {
    if (error instanceof JobNotFoundError) return;
    shared.logger.warn("could not settle a cancelled job; it is dead-lettered when its lease expires", {
      job: String(ctx),
      error: String(error)
    });
  }
}
async function supervise(shared, ctx, run) {
  const fixed = shared.autoExtend ?? void 0;
  for (; ; ) {
    const interval = heartbeatInterval(fixed, ctx.leaseExpiresAt.getTime(), Date.now());
    let timer;
    let onAbort;
    const tick = new Promise((resolve) => {
      timer = setTimeout(() => resolve("tick"), interval);
      onAbort = () => resolve("aborted");
      ctx.signal.addEventListener("abort", onAbort, { once: true });
    });
    const first = ctx.signal.aborted ? "aborted" : await Promise.race([run, tick]);
    clearTimeout(timer);
    if (onAbort !== void 0) ctx.signal.removeEventListener("abort", onAbort);
    if (first === "aborted") {
      const reason = ctx.signal.reason;
      const cancelled = reason?.cause instanceof JobCancelledError;
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
            error: String(error)
          });
        const cancelled = error instanceof JobCancelledError;
        const what = cancelled ? `${ctx} was cancelled` : `the lease of ${ctx} was lost`;
        const reason = new LeaseLostError(`${what}: ${error.message}`, { cause: error });
        leaseOf(ctx).controller.abort(reason);
        return { kind: "leaseLost", error: reason, cancelled };
      }
      shared.logger.warn("could not extend the lease; lease still valid, will retry", {
        jobId: ctx.id,
        error: String(error)
      });
    }
  }
}
async function settleNack(shared, ctx, retry, reason) {
  try {
    await shared.client.nack(ctx, { retry, reason });
  } catch (error) {
    logSettleFailure(shared.logger, "nack", ctx, error);
  }
}
function logSettleFailure(logger, operation, ctx, error) {
  if (error instanceof JobCancelledError) {
    logger.warn(`job cancelled: ${operation} refused; the job is dead-lettered, not redelivered`, {
      job: String(ctx),
      error: String(error)
    });
    return;
  }
  logger.error(
    `${operation} failed: the job will be redelivered when its lease expires (or an earlier retry already settled it)`,
    { job: String(ctx), error: String(error) }
  );
}

// src/worker/slots.ts
var Slots = class {
  #free;
  #waiting = [];
  constructor(size) {
    this.#free = size;
  }
  /** Free slots right now. */
  get free() {
    return this.#free;
  }
  /** Takes a slot; resolves false (holding nothing) if `signal` aborts first. */
  acquire(signal) {
    if (signal?.aborted) return Promise.resolve(false);
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const grant = () => {
        signal?.removeEventListener("abort", abandon);
        resolve(true);
      };
      const abandon = () => {
        const index = this.#waiting.indexOf(grant);
        if (index >= 0) this.#waiting.splice(index, 1);
        resolve(false);
      };
      this.#waiting.push(grant);
      signal?.addEventListener("abort", abandon, { once: true });
    });
  }
  /** Gives a slot back, to the longest waiter if there is one; false when a waiter took it. */
  release() {
    const next = this.#waiting.shift();
    if (next) {
      next();
      return false;
    }
    this.#free++;
    return true;
  }
};
function pause(ms, signal) {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

// src/worker/stream.ts
import { status as Status7 } from "@grpc/grpc-js";
var DEFAULT_MAX_CREDITS = 1e4;
var DEFAULT_MAX_SETTLES = 256;
async function runStream(options) {
  const { client, logger, slots, stop } = options;
  let info;
  try {
    info = await client.getServerInfo();
  } catch (error) {
    logger.warn("could not read the server's features; trying the Consume stream", { error: String(error) });
  }
  if (info !== void 0 && !info.features.includes("consume")) {
    logger.info?.("the server offers no Consume stream; reserving", { workerId: options.workerId });
    return "fallback";
  }
  const limits = {
    maxCredits: info?.maxConsumeCredits || DEFAULT_MAX_CREDITS,
    maxSettles: info?.maxEnqueueBatch || DEFAULT_MAX_SETTLES
  };
  const running = /* @__PURE__ */ new Map();
  let current;
  let redirects = 0;
  while (!stop.aborted) {
    let opened;
    try {
      opened = client.openConsume(
        {
          queues: options.queues,
          leaseDuration: options.leaseDuration,
          workerId: options.workerId,
          credits: slots.free,
          ...limits
        },
        {
          jobs: (jobs) => {
            for (const job of jobs) void slots.acquire().then(() => startJob(job));
          },
          cancelled: (ids) => {
            for (const id of ids) running.get(id)?.(cancelledReason(id));
          }
        }
      );
    } catch (error) {
      logger.warn(`cannot open the Consume stream: ${String(error)}; retrying in ${options.backoff} ms`, {
        error
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
    current = void 0;
    const { code, details } = end.status;
    if (code === Status7.UNIMPLEMENTED) {
      logger.info?.("the server answered the Consume stream UNIMPLEMENTED; reserving", {
        workerId: options.workerId
      });
      return "fallback";
    }
    if (stop.aborted) break;
    if (end.received) redirects = 0;
    if (end.redirected && redirects < MAX_REDIRECTS) {
      redirects++;
      continue;
    }
    const label = Status7[code] ?? String(code);
    logger.warn(`the Consume stream ended (${label}: ${details}); reopening in ${options.backoff} ms`, {
      code: label,
      details,
      backoffMs: options.backoff
    });
    await pause(options.backoff, stop);
  }
  return "stopped";
  function startJob(job) {
    const { ctx } = job;
    let cancel;
    const cancelled = new Promise((resolve) => {
      cancel = (reason) => {
        leaseOf(ctx).controller.abort(reason);
        resolve(reason);
      };
    });
    running.set(ctx.id, cancel);
    options.start(job, { cancelled }, (freed) => {
      running.delete(ctx.id);
      if (freed) current?.grant(1);
    });
  }
}
function cancelledReason(id) {
  const cause = new JobCancelledError("named cancelled on the Consume stream");
  return new LeaseLostError(`job ${id} was cancelled: ${cause.message}`, { cause });
}

// src/worker/worker.ts
var ShutdownHandle = class {
  #controller = new AbortController();
  /** Stop reserving, finish the jobs in flight, then let `run()` resolve. */
  shutdown() {
    this.#controller.abort();
  }
  /** Whether shutdown was asked for. */
  get isShutdown() {
    return this.#controller.signal.aborted;
  }
  /** Aborts on shutdown. */
  get signal() {
    return this.#controller.signal;
  }
};
var Worker = class {
  /** The worker id sent with every reserve, ack, nack and extend. */
  workerId;
  #client;
  #queues;
  #leaseDuration;
  #maxInFlight;
  #autoExtend;
  #waitTimeout;
  #maxJobs;
  #reserveErrorBackoff;
  #streaming;
  #logger;
  #handlers = /* @__PURE__ */ new Map();
  #catchAll;
  #shutdown = new ShutdownHandle();
  #running = false;
  constructor(client, options) {
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
    this.#waitTimeout = checkMs("Worker: waitTimeout", options.waitTimeout ?? 3e4);
    if (this.#waitTimeout === 0)
      throw new ValidationError("Worker: waitTimeout must be above 0 (a zero wait would poll in a hot loop)");
    this.#maxJobs = options.maxJobs === void 0 ? void 0 : checkCount("Worker: maxJobs", options.maxJobs, 1);
    this.#reserveErrorBackoff = checkMs("Worker: reserveErrorBackoff", options.reserveErrorBackoff ?? 1e3);
    if (options.streaming !== void 0 && typeof options.streaming !== "boolean")
      throw new ValidationError("Worker: streaming must be a boolean");
    this.#streaming = options.streaming ?? true;
    if (options.autoExtendInterval !== void 0)
      checkMs("Worker: autoExtendInterval", options.autoExtendInterval);
    this.#autoExtend = options.autoExtend ? options.autoExtendInterval ?? null : void 0;
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
  handle(jobType, handler) {
    if (typeof jobType !== "string" || jobType === "")
      throw new ValidationError("Worker.handle: jobType must not be empty");
    if (typeof handler !== "function")
      throw new ValidationError("Worker.handle: the handler must be a function");
    if (this.#handlers.has(jobType)) {
      throw new ValidationError(
        `Worker.handle: a handler for job type ${JSON.stringify(jobType)} is already registered`
      );
    }
    this.#handlers.set(jobType, handler);
    return this;
  }
  /** Runs `handler` for jobs whose type has no handler of its own (replacing an earlier one); chainable. */
  catchAll(handler) {
    if (typeof handler !== "function")
      throw new ValidationError("Worker.catchAll: the handler must be a function");
    this.#catchAll = handler;
    return this;
  }
  /** The handle that stops this Worker. */
  shutdownHandle() {
    return this.#shutdown;
  }
  /** Processes jobs until shut down; resolves once the jobs in flight are settled. Runs once at a time. */
  async run() {
    if (this.#running) throw new ValidationError("Worker.run: this Worker is already running");
    this.#running = true;
    const logger = this.#logger;
    const stop = this.#shutdown.signal;
    const shared = {
      client: this.#client,
      logger,
      leaseDuration: this.#leaseDuration,
      autoExtend: this.#autoExtend,
      handlers: this.#handlers,
      catchAll: this.#catchAll
    };
    const slots = new Slots(this.#maxInFlight);
    const inFlight = /* @__PURE__ */ new Set();
    const start = (job, hooks = {}, released) => {
      let holding = true;
      const release = () => {
        if (!holding) return;
        holding = false;
        const freed = slots.release();
        released?.(freed);
      };
      const own = released === void 0 ? hooks : {
        ...hooks,
        handlerDone: () => {
          hooks.handlerDone?.();
          release();
        }
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
      catchAll: this.#catchAll !== void 0,
      autoExtend: this.#autoExtend !== void 0,
      queues: this.#queues,
      streaming: this.#streaming
    });
    try {
      const streamed = this.#streaming ? await runStream({
        client: this.#client,
        logger,
        queues: this.#queues,
        leaseDuration: this.#leaseDuration,
        workerId: this.workerId,
        backoff: this.#reserveErrorBackoff,
        slots,
        stop,
        start
      }) : "fallback";
      while (streamed === "fallback" && await slots.acquire(stop)) {
        const jobs = await this.#reserveOnce(slots, stop);
        if (jobs === null) continue;
        start(jobs[0]);
        for (const job of jobs.slice(1)) {
          await slots.acquire();
          start(job);
        }
      }
      logger.info?.("worker shutting down; waiting for in-flight jobs to finish", {
        workerId: this.workerId,
        inFlight: inFlight.size
      });
      while (inFlight.size > 0) await Promise.all(inFlight);
      logger.info?.("worker stopped", { workerId: this.workerId });
    } finally {
      this.#running = false;
    }
  }
  /** One reserve while holding a slot: the jobs (the slot passes to the first), or null with the slot released. */
  async #reserveOnce(slots, stop) {
    const started = Date.now();
    let jobs;
    try {
      jobs = await this.#client.reserve({
        queues: this.#queues,
        leaseDuration: this.#leaseDuration,
        waitTimeout: this.#waitTimeout,
        maxJobs: reserveBatch(this.#maxJobs, slots.free),
        workerId: this.workerId,
        signal: stop
      });
    } catch (error) {
      slots.release();
      if (stop.aborted) return null;
      const backoff = this.#reserveErrorBackoff;
      this.#logger.warn(`reserve error: ${String(error)}; backing off for ${backoff} ms`, {
        error,
        backoffMs: backoff
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
};
export {
  ALL_QUEUES,
  AttemptMismatchError,
  BatchResultCountMismatchError,
  BatchValidationError,
  ClientError,
  ConnectError,
  DeadLetterCause,
  DeadLetterRecord2 as DeadLetterRecord,
  EmptyBatchError,
  HandlerError,
  InvalidApiKeyError,
  InvalidRequestError,
  JobCancelledError,
  JobCtx,
  JobDeadLetteredError,
  JobNotFoundError,
  JobRejectedError,
  LeaseError,
  LeaseLostError,
  MalformedResponseError,
  OverloadedError,
  Payload2 as Payload,
  Priority,
  RetryDirective,
  RetryPolicy,
  ScheduleCatchUp,
  ScheduleLimitError,
  ScheduleOverlap,
  SeppClient,
  SeppError,
  ServerInternalError,
  ShutdownHandle,
  TransportError,
  UnauthenticatedError,
  UnexpectedStatusError,
  UnknownQueuesError,
  VERSION,
  ValidationError,
  Worker,
  describeJobRejection,
  isJobRejection
};
