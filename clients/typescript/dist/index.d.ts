import * as grpc from '@grpc/grpc-js';
import { Metadata } from '@grpc/grpc-js';
import { BinaryWriter, BinaryReader } from '@bufbuild/protobuf/wire';

/**
 * Logging: the {@link Logger} interface the client and the Worker write diagnostics to. The library
 * is silent unless a logger is passed; `console` fits the interface, and so does a thin adapter
 * around pino or winston.
 */
/** Structured fields attached to a log message. */
type LogMeta = Record<string, unknown>;
/** Where the client and the Worker send their diagnostics. `warn` and `error` are required. */
interface Logger {
    warn(message: string, meta?: LogMeta): void;
    error(message: string, meta?: LogMeta): void;
    info?(message: string, meta?: LogMeta): void;
    debug?(message: string, meta?: LogMeta): void;
}

/** The options of a {@link RetryPolicy}; durations are milliseconds. */
interface RetryPolicyOptions {
    /** Total attempts, the first included (default 1: no retries); values below 1 count as 1. */
    maxAttempts?: number;
    /** The backoff before the first retry (default 100 ms). */
    initialBackoff?: number;
    /** The largest backoff (default 10 000 ms). */
    maxBackoff?: number;
    /** The factor the backoff grows by after each retry (default 2); values below 1 count as 1. */
    multiplier?: number;
    /** Whether each sleep is the backoff times a random factor in [0.5, 1) (default true). */
    jitter?: boolean;
    /**
     * How long a call to a cluster keeps being retried, once the attempts are used up, while the
     * cluster fails over (default 15 000 ms; 0 turns it off). See the module's comment.
     */
    failoverWindow?: number;
}
/**
 * How often, and how patiently, the client retries a failed call. The delay before retry n is the
 * current backoff times a random factor in [0.5, 1) (exactly the backoff without jitter); after each
 * retry the backoff is multiplied by `multiplier`, up to `maxBackoff`. Each retry is logged at warn.
 */
declare class RetryPolicy {
    readonly maxAttempts: number;
    readonly initialBackoff: number;
    readonly maxBackoff: number;
    readonly multiplier: number;
    readonly jitter: boolean;
    readonly failoverWindow: number;
    constructor(options?: RetryPolicyOptions);
    /** The sleep before a retry whose backoff is `backoff`, given a uniform random number in [0, 1). */
    delay(backoff: number, random: number): number;
    /** The backoff that follows `backoff`. */
    nextBackoff(backoff: number): number;
    /** The backoff before the first retry. */
    firstBackoff(): number;
}
/** What happens to a nacked job. Build one with the static methods. */
declare class RetryDirective {
    /** `default`: the queue's retry policy; `after`: after `delay` ms; `deadLetter`: dead-letter now. */
    readonly kind: "default" | "after" | "deadLetter";
    /** The delay in milliseconds, for `after`. */
    readonly delay?: number | undefined;
    private constructor();
    private static readonly DEFAULT;
    private static readonly DEAD_LETTER;
    /** Retry under the queue's retry policy (or dead-letter the job if this was its last attempt). */
    static default(): RetryDirective;
    /** Retry after `delayMs` (capped by the server's schedule horizon), or dead-letter after the last attempt. */
    static after(delayMs: number): RetryDirective;
    /** Dead-letter the job now, whatever attempts it has left. */
    static deadLetter(): RetryDirective;
    toString(): string;
}

/** The options of `SeppClient.connect`. Durations are milliseconds. */
interface ConnectOptions {
    /** Sent as `authorization: Bearer <key>` on every call; a warning is logged when it would travel without TLS. */
    apiKey?: string | undefined;
    /** Use TLS, trusting the platform's root certificates (also implied by `https://`, `tlsCaCert` or `tlsDomain`). */
    tls?: boolean | undefined;
    /** Trust this PEM certificate authority instead of the platform roots (turns TLS on). */
    tlsCaCert?: Buffer | string | undefined;
    /** Verify the server's certificate against this name instead of the address's host (turns TLS on). */
    tlsDomain?: string | undefined;
    /** Retries of transient failures (default: none). */
    retryPolicy?: RetryPolicy | undefined;
    /** How long the first connection may take (default 5 000). */
    connectTimeout?: number | undefined;
    /** The deadline of every call except reserve (default 30 000); a reserve gets its wait plus 10 s. */
    rpcTimeout?: number | undefined;
    /** The largest response accepted (default: grpc-js's 4 MiB). */
    maxReceiveMessageBytes?: number | undefined;
    /** Where diagnostics go (default: nowhere). */
    logger?: Logger | undefined;
    /**
     * Send the acks made in one turn of the event loop (a Worker's acks of one reserve answer) as one
     * `AckBatch` call, or one `Ack` each against a server without it (default true). False sends every
     * ack on its own call.
     */
    coalesceAcks?: boolean | undefined;
    /**
     * Let concurrent `enqueue` and `enqueueBatch` calls share `EnqueueBatch` calls: those made in one
     * turn of the event loop, and those waiting while four calls are in flight (default true). Each
     * caller still gets exactly its own results and errors. False sends every enqueue on its own call.
     */
    coalesceEnqueues?: boolean | undefined;
    /**
     * Follow a cluster's leader from this client (default true): calls carry the metadata
     * `sepp-follow-leader`, so a follower refuses them naming the leader (`sepp-leader`) and the client
     * calls the leader directly. False sends calls without it, and a follower forwards them to the
     * leader (one hop more: for a client that can reach only some nodes).
     */
    followLeader?: boolean | undefined;
}

/**
 * Why the server refused one job: the {@link JobRejection} union (a value, not an error, in the
 * results of `enqueueBatch`), with {@link isJobRejection} to tell it from an ack and
 * {@link describeJobRejection} for a readable sentence.
 *
 * Every reason is deterministic (the same job is refused again under the same configuration) except
 * `queueFull` and `queueClosing`. A reason this version does not know is `{ kind: "unknown" }`.
 */
type JobRejection = {
    kind: "unknownQueue";
    queue: string;
} | {
    kind: "payloadTooLarge";
    limit: number;
    actual: number;
} | {
    kind: "encodingNotAllowed";
    encoding: string;
    allowed: string[];
} | {
    kind: "jobTypeNotAllowed";
    jobType: string;
    allowed: string[];
} | {
    kind: "customEntriesTooMany";
    limit: number;
    actual: number;
} | {
    kind: "customMapTooLarge";
    limit: number;
    actual: number;
} | {
    kind: "customKeyTooLong";
    key: string;
    limit: number;
    actual: number;
} | {
    kind: "queueNameTooLong";
    limit: number;
    actual: number;
} | {
    kind: "jobTypeNameTooLong";
    limit: number;
    actual: number;
} | {
    kind: "idempotencyKeyTooLong";
    limit: number;
    actual: number;
}
/** `horizon` in milliseconds; `actual` is the requested delivery time. */
 | {
    kind: "scheduledTooFar";
    horizon: number;
    actual: Date;
} | {
    kind: "invalidRequest";
    message: string;
} | {
    kind: "queueFull";
    queue: string;
    limit: number;
} | {
    kind: "queueClosing";
    queue: string;
} | {
    kind: "unknown";
};
/** The kinds of rejection. */
type JobRejectionKind = JobRejection["kind"];
/** Whether a batch result is a rejection (rather than an `EnqueueAck`). */
declare function isJobRejection(result: unknown): result is JobRejection;
/** A one-line description of a rejection, for logs and error messages. */
declare function describeJobRejection(rejection: JobRejection): string;

/** The base class of every error this package throws. */
declare class SeppError extends Error {
    name: string;
}
/** Bad input to a client method (an empty queue name, a priority of 12, ...): nothing was sent. */
declare class ValidationError extends SeppError {
    name: string;
}
/** A failed call, or a response the client could not make sense of. */
declare class ClientError extends SeppError {
    name: string;
    /** The gRPC status code, when the failure came from one. */
    readonly code: number | undefined;
    /** The status message as the server (or grpc-js) gave it. */
    readonly details: string;
    constructor(message: string, options?: {
        code?: number;
        details?: string;
        cause?: unknown;
    });
}
/** The connection could not be established (or the address is unusable); `reason` is the root cause. */
declare class ConnectError extends ClientError {
    readonly addr: string;
    readonly reason: string;
    name: string;
    constructor(addr: string, reason: string);
}
/** The API key cannot be sent as a header value (it must be non-empty, printable ASCII). */
declare class InvalidApiKeyError extends ClientError {
    name: string;
    constructor();
}
/** The call failed in transit or ran out of time (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, CANCELLED). */
declare class TransportError extends ClientError {
    name: string;
}
/** The server refused the credentials (UNAUTHENTICATED, PERMISSION_DENIED). */
declare class UnauthenticatedError extends ClientError {
    name: string;
}
/** The server is overloaded, or a message was larger than allowed (RESOURCE_EXHAUSTED). */
declare class OverloadedError extends ClientError {
    name: string;
}
/** The server refused the request as malformed (INVALID_ARGUMENT). */
declare class InvalidRequestError extends ClientError {
    name: string;
}
/** The server failed (INTERNAL, DATA_LOSS, UNKNOWN). */
declare class ServerInternalError extends ClientError {
    name: string;
}
/** Any other status code. */
declare class UnexpectedStatusError extends ClientError {
    name: string;
}
/** An enqueue call was given no job; nothing was sent. */
declare class EmptyBatchError extends ClientError {
    name: string;
    constructor();
}
/** The server answered a batch with a different number of results than jobs were sent. */
declare class BatchResultCountMismatchError extends ClientError {
    readonly expected: number;
    readonly got: number;
    name: string;
    constructor(expected: number, got: number);
}
/** The response broke the protocol; the message says how. */
declare class MalformedResponseError extends ClientError {
    name: string;
}
/** `enqueue` got a rejection for its job. */
declare class JobRejectedError extends SeppError {
    readonly rejection: JobRejection;
    name: string;
    constructor(rejection: JobRejection);
}
/** One refused job of an atomic batch: its position in the request, and why. */
interface JobValidationError {
    index: number;
    rejection: JobRejection;
}
/** `enqueueAtomic` was refused as a whole; `errors` lists every job that failed validation. */
declare class BatchValidationError extends SeppError {
    readonly errors: JobValidationError[];
    name: string;
    constructor(errors: JobValidationError[]);
}
/** The worker no longer holds the job's lease (ack, nack, extend). */
declare class LeaseError extends SeppError {
    name: string;
}
/**
 * The job is no longer in flight: settled already, or its lease expired (NOT_FOUND). After a retried
 * ack or nack this can also mean an earlier attempt succeeded and only its answer was lost.
 */
declare class JobNotFoundError extends LeaseError {
    name: string;
    constructor(details?: string);
}
/**
 * The job was cancelled (`SeppClient.cancel`) while this lease held it: NOT_FOUND with the trailer
 * `sepp-cancelled: true`. The call that got it dead-lettered the job (cause `cancelled`); it is never
 * delivered again, and later calls for this lease throw a plain {@link JobNotFoundError}. It extends
 * `JobNotFoundError`, so code that handles a lost lease keeps working unchanged.
 */
declare class JobCancelledError extends JobNotFoundError {
    name: string;
    constructor(details?: string);
}
/** The job was redelivered: this attempt's lease is no longer the current one (FAILED_PRECONDITION). */
declare class AttemptMismatchError extends LeaseError {
    name: string;
    constructor(details?: string);
}
/**
 * The reason a Worker aborts `ctx.signal`: the lease could not be kept alive while the handler ran,
 * so the job belongs to another attempt now and this one's result is ignored.
 */
declare class LeaseLostError extends LeaseError {
    name: string;
}
/** Reserve named a queue the server does not know while it runs with strict queues (FAILED_PRECONDITION). */
declare class UnknownQueuesError extends SeppError {
    name: string;
}
/** `cancel` found the job already in the dead-letter queue (FAILED_PRECONDITION). */
declare class JobDeadLetteredError extends SeppError {
    name: string;
}
/**
 * `upsertSchedule` of a new schedule found the server keeping as many schedules as it may (100,000):
 * FAILED_PRECONDITION. Delete some, or replace an existing one, instead.
 */
declare class ScheduleLimitError extends SeppError {
    name: string;
}
/** The parts of a grpc-js `ServiceError` the mapping reads. */
interface StatusLike {
    code: number;
    details: string;
    /** The trailing metadata (grpc-js puts it on the error as `metadata`). */
    metadata?: {
        get(key: string): unknown[];
    } | undefined;
}

/**
 * A Duration represents a signed, fixed-length span of time represented
 * as a count of seconds and fractions of seconds at nanosecond
 * resolution. It is independent of any calendar and concepts like "day"
 * or "month". It is related to Timestamp in that the difference between
 * two Timestamp values is a Duration and it can be added or subtracted
 * from a Timestamp. Range is approximately +-10,000 years.
 *
 * # Examples
 *
 * Example 1: Compute Duration from two Timestamps in pseudo code.
 *
 *     Timestamp start = ...;
 *     Timestamp end = ...;
 *     Duration duration = ...;
 *
 *     duration.seconds = end.seconds - start.seconds;
 *     duration.nanos = end.nanos - start.nanos;
 *
 *     if (duration.seconds < 0 && duration.nanos > 0) {
 *       duration.seconds += 1;
 *       duration.nanos -= 1000000000;
 *     } else if (duration.seconds > 0 && duration.nanos < 0) {
 *       duration.seconds -= 1;
 *       duration.nanos += 1000000000;
 *     }
 *
 * Example 2: Compute Timestamp from Timestamp + Duration in pseudo code.
 *
 *     Timestamp start = ...;
 *     Duration duration = ...;
 *     Timestamp end = ...;
 *
 *     end.seconds = start.seconds + duration.seconds;
 *     end.nanos = start.nanos + duration.nanos;
 *
 *     if (end.nanos < 0) {
 *       end.seconds -= 1;
 *       end.nanos += 1000000000;
 *     } else if (end.nanos >= 1000000000) {
 *       end.seconds += 1;
 *       end.nanos -= 1000000000;
 *     }
 *
 * Example 3: Compute Duration from datetime.timedelta in Python.
 *
 *     td = datetime.timedelta(days=3, minutes=10)
 *     duration = Duration()
 *     duration.FromTimedelta(td)
 *
 * # JSON Mapping
 *
 * In JSON format, the Duration type is encoded as a string rather than an
 * object, where the string ends in the suffix "s" (indicating seconds) and
 * is preceded by the number of seconds, with nanoseconds expressed as
 * fractional seconds. For example, 3 seconds with 0 nanoseconds should be
 * encoded in JSON format as "3s", while 3 seconds and 1 nanosecond should
 * be expressed in JSON format as "3.000000001s", and 3 seconds and 1
 * microsecond should be expressed in JSON format as "3.000001s".
 */
interface Duration {
    /**
     * Signed seconds of the span of time. Must be from -315,576,000,000
     * to +315,576,000,000 inclusive. Note: these bounds are computed from:
     * 60 sec/min * 60 min/hr * 24 hr/day * 365.25 days/year * 10000 years
     */
    seconds: bigint;
    /**
     * Signed fractions of a second at nanosecond resolution of the span
     * of time. Durations less than one second are represented with a 0
     * `seconds` field and a positive or negative `nanos` field. For durations
     * of one second or more, a non-zero value for the `nanos` field must be
     * of the same sign as the `seconds` field. Must be from -999,999,999
     * to +999,999,999 inclusive.
     */
    nanos: number;
}
declare const Duration: MessageFns$3<Duration>;
interface MessageFns$3<T> {
    encode(message: T, writer?: BinaryWriter): BinaryWriter;
    decode(input: BinaryReader | Uint8Array, length?: number): T;
}

/**
 * A generic empty message that you can re-use to avoid defining duplicated
 * empty messages in your APIs. A typical example is to use it as the request
 * or the response type of an API method. For instance:
 *
 *     service Foo {
 *       rpc Bar(google.protobuf.Empty) returns (google.protobuf.Empty);
 *     }
 */
interface Empty {
}
declare const Empty: MessageFns$2<Empty>;
interface MessageFns$2<T> {
    encode(message: T, writer?: BinaryWriter): BinaryWriter;
    decode(input: BinaryReader | Uint8Array, length?: number): T;
}

/**
 * A Timestamp represents a point in time independent of any time zone or local
 * calendar, encoded as a count of seconds and fractions of seconds at
 * nanosecond resolution. The count is relative to an epoch at UTC midnight on
 * January 1, 1970, in the proleptic Gregorian calendar which extends the
 * Gregorian calendar backwards to year one.
 *
 * All minutes are 60 seconds long. Leap seconds are "smeared" so that no leap
 * second table is needed for interpretation, using a [24-hour linear
 * smear](https://developers.google.com/time/smear).
 *
 * The range is from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z. By
 * restricting to that range, we ensure that we can convert to and from [RFC
 * 3339](https://www.ietf.org/rfc/rfc3339.txt) date strings.
 *
 * # Examples
 *
 * Example 1: Compute Timestamp from POSIX `time()`.
 *
 *     Timestamp timestamp;
 *     timestamp.set_seconds(time(NULL));
 *     timestamp.set_nanos(0);
 *
 * Example 2: Compute Timestamp from POSIX `gettimeofday()`.
 *
 *     struct timeval tv;
 *     gettimeofday(&tv, NULL);
 *
 *     Timestamp timestamp;
 *     timestamp.set_seconds(tv.tv_sec);
 *     timestamp.set_nanos(tv.tv_usec * 1000);
 *
 * Example 3: Compute Timestamp from Win32 `GetSystemTimeAsFileTime()`.
 *
 *     FILETIME ft;
 *     GetSystemTimeAsFileTime(&ft);
 *     UINT64 ticks = (((UINT64)ft.dwHighDateTime) << 32) | ft.dwLowDateTime;
 *
 *     // A Windows tick is 100 nanoseconds. Windows epoch 1601-01-01T00:00:00Z
 *     // is 11644473600 seconds before Unix epoch 1970-01-01T00:00:00Z.
 *     Timestamp timestamp;
 *     timestamp.set_seconds((INT64) ((ticks / 10000000) - 11644473600LL));
 *     timestamp.set_nanos((INT32) ((ticks % 10000000) * 100));
 *
 * Example 4: Compute Timestamp from Java `System.currentTimeMillis()`.
 *
 *     long millis = System.currentTimeMillis();
 *
 *     Timestamp timestamp = Timestamp.newBuilder().setSeconds(millis / 1000)
 *         .setNanos((int) ((millis % 1000) * 1000000)).build();
 *
 * Example 5: Compute Timestamp from Java `Instant.now()`.
 *
 *     Instant now = Instant.now();
 *
 *     Timestamp timestamp =
 *         Timestamp.newBuilder().setSeconds(now.getEpochSecond())
 *             .setNanos(now.getNano()).build();
 *
 * Example 6: Compute Timestamp from current time in Python.
 *
 *     timestamp = Timestamp()
 *     timestamp.GetCurrentTime()
 *
 * # JSON Mapping
 *
 * In JSON format, the Timestamp type is encoded as a string in the
 * [RFC 3339](https://www.ietf.org/rfc/rfc3339.txt) format. That is, the
 * format is "{year}-{month}-{day}T{hour}:{min}:{sec}[.{frac_sec}]Z"
 * where {year} is always expressed using four digits while {month}, {day},
 * {hour}, {min}, and {sec} are zero-padded to two digits each. The fractional
 * seconds, which can go up to 9 digits (i.e. up to 1 nanosecond resolution),
 * are optional. The "Z" suffix indicates the timezone ("UTC"); the timezone
 * is required. A ProtoJSON serializer should always use UTC (as indicated by
 * "Z") when printing the Timestamp type and a ProtoJSON parser should be
 * able to accept both UTC and other timezones (as indicated by an offset).
 *
 * For example, "2017-01-15T01:30:15.01Z" encodes 15.01 seconds past
 * 01:30 UTC on January 15, 2017.
 *
 * In JavaScript, one can convert a Date object to this format using the
 * standard
 * [toISOString()](https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Global_Objects/Date/toISOString)
 * method. In Python, a standard `datetime.datetime` object can be converted
 * to this format using
 * [`strftime`](https://docs.python.org/2/library/time.html#time.strftime) with
 * the time format spec '%Y-%m-%dT%H:%M:%S.%fZ'. Likewise, in Java, one can use
 * the Joda Time's [`ISODateTimeFormat.dateTime()`](
 * http://joda-time.sourceforge.net/apidocs/org/joda/time/format/ISODateTimeFormat.html#dateTime()
 * ) to obtain a formatter capable of generating timestamps in this format.
 */
interface Timestamp {
    /**
     * Represents seconds of UTC time since Unix epoch 1970-01-01T00:00:00Z. Must
     * be between -62135596800 and 253402300799 inclusive (which corresponds to
     * 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z).
     */
    seconds: bigint;
    /**
     * Non-negative fractions of a second at nanosecond resolution. This field is
     * the nanosecond portion of the duration, not an alternative to seconds.
     * Negative second values with fractions must still have non-negative nanos
     * values that count forward in time. Must be between 0 and 999,999,999
     * inclusive.
     */
    nanos: number;
}
declare const Timestamp: MessageFns$1<Timestamp>;
interface MessageFns$1<T> {
    encode(message: T, writer?: BinaryWriter): BinaryWriter;
    decode(input: BinaryReader | Uint8Array, length?: number): T;
}

/** A custom metadata value; exactly one member must be set. */
interface PrimitiveValue {
    value: {
        $case: "stringValue";
        value: string;
    } | {
        $case: "doubleValue";
        value: number;
    } | {
        $case: "intValue";
        value: bigint;
    } | {
        $case: "boolValue";
        value: boolean;
    } | undefined;
}
declare const PrimitiveValue: MessageFns<PrimitiveValue>;
/** W3C trace context carried with a job. */
interface TraceContext$1 {
    traceparent: string;
    tracestate?: string | undefined;
}
declare const TraceContext$1: MessageFns<TraceContext$1>;
/** Opaque job data. `data` must be non-empty: omit the payload instead. */
interface Payload$1 {
    data: Buffer;
    encoding: string;
}
declare const Payload$1: MessageFns<Payload$1>;
/** A job as delivered to a worker or kept in a dead-letter record. */
interface Job$1 {
    id: string;
    jobType: string;
    payload?: Payload$1 | undefined;
    priority: number;
    traceContext?: TraceContext$1 | undefined;
    enqueuedAt: Timestamp | undefined;
    attempt: number;
    maxAttempts: number;
    leaseExpiresAt: Timestamp | undefined;
    custom: {
        [key: string]: PrimitiveValue;
    };
    scheduledAt: Timestamp | undefined;
    queue: string;
}
declare const Job$1: MessageFns<Job$1>;
interface AckRequest {
    jobId: string;
    attempt: number;
    workerId?: string | undefined;
}
declare const AckRequest: MessageFns<AckRequest>;
interface AckResponse {
    jobId: string;
}
declare const AckResponse: MessageFns<AckResponse>;
/** A gRPC status for one item of a batch call. */
interface CallStatus {
    /** The gRPC status code number (NOT_FOUND = 5, ...); never OK. */
    code: number;
    message: string;
    /**
     * True when the job was cancelled (added after 0.1): what the trailer `sepp-cancelled: true`
     * says on a call of its own.
     */
    cancelled: boolean;
}
declare const CallStatus: MessageFns<CallStatus>;
interface NackRequest {
    jobId: string;
    attempt: number;
    reason?: string | undefined;
    retry?: NackRetry | undefined;
    workerId?: string | undefined;
}
declare const NackRequest: MessageFns<NackRequest>;
interface NackRetry {
    strategy: //
    /** The queue's retry policy. */
    {
        $case: "default";
        value: Empty;
    } | {
        $case: "delay";
        value: Duration;
    } | {
        $case: "deadLetter";
        value: Empty;
    } | undefined;
}
declare const NackRetry: MessageFns<NackRetry>;
interface NackResponse {
    jobId: string;
    deadLettered: boolean;
}
declare const NackResponse: MessageFns<NackResponse>;
interface ExtendRequest {
    jobId: string;
    attempt: number;
    /** Counted from now. */
    leaseDuration: Duration | undefined;
    workerId?: string | undefined;
}
declare const ExtendRequest: MessageFns<ExtendRequest>;
interface ExtendResponse {
    jobId: string;
    leaseExpiresAt: Timestamp | undefined;
}
declare const ExtendResponse: MessageFns<ExtendResponse>;
/**
 * One message from a worker on a Consume stream. Every member is optional; a message may carry
 * credits and settles together.
 */
interface ConsumeRequest {
    /** The first message, and only the first, opens the stream. */
    open?: ConsumeOpen | undefined;
    /**
     * More jobs the worker can take, added to those it granted and has not yet been sent. The
     * outstanding total may not exceed the server's max_consume_credits (INVALID_ARGUMENT).
     */
    credits: number;
    /**
     * Acks, nacks and extends of jobs leased on this stream or elsewhere; at most the server's
     * max_enqueue_batch per message.
     */
    settles: ConsumeSettle[];
}
declare const ConsumeRequest: MessageFns<ConsumeRequest>;
interface ConsumeOpen {
    /** As ReserveRequest.queues: at least one, polled in the order given. */
    queues: string[];
    /** Must be greater than zero; every job pushed is leased for this long. */
    leaseDuration: Duration | undefined;
    workerId?: string | undefined;
    /** Credits granted with the opening, as ConsumeRequest.credits. */
    credits: number;
}
declare const ConsumeOpen: MessageFns<ConsumeOpen>;
interface ConsumeSettle {
    /** Chosen by the worker and echoed on the result; the server does not interpret it. */
    id: bigint;
    op: {
        $case: "ack";
        value: AckRequest;
    } | {
        $case: "nack";
        value: NackRequest;
    } | {
        $case: "extend";
        value: ExtendRequest;
    } | undefined;
}
declare const ConsumeSettle: MessageFns<ConsumeSettle>;
/** One message from the server on a Consume stream. */
interface ConsumeResponse {
    /** Jobs leased to this worker, each using one credit. */
    jobs: Job$1[];
    /** Answers to settles, each once durable, in the order they were decided. */
    results: ConsumeResult[];
    /**
     * Ids of jobs leased on this stream that were cancelled since: their handlers should stop.
     * Settling such a job fails NOT_FOUND with `cancelled` set, as with CancelJob's unary rule.
     */
    cancelled: string[];
}
declare const ConsumeResponse: MessageFns<ConsumeResponse>;
interface ConsumeResult {
    /** The settle's id. */
    id: bigint;
    outcome: {
        $case: "ack";
        value: AckResponse;
    } | {
        $case: "nack";
        value: NackResponse;
    } | {
        $case: "extend";
        value: ExtendResponse;
    } | //
    /** The status the unary call would have failed with. */
    {
        $case: "error";
        value: CallStatus;
    } | undefined;
}
declare const ConsumeResult: MessageFns<ConsumeResult>;
interface MessageFns<T> {
    encode(message: T, writer?: BinaryWriter): BinaryWriter;
    decode(input: BinaryReader | Uint8Array, length?: number): T;
}

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

/** An ack, nack or extend as a settle carries it. */
type SettleOp = NonNullable<ConsumeSettle["op"]>;
/** A settle's successful outcome. */
type SettleOutcome = Exclude<NonNullable<ConsumeResult["outcome"]>, {
    $case: "error";
}>;
/** Where a lease's settles go first: the stream its job came on. */
interface SettleRoute {
    /** The outcome of `op` sent on the stream, or undefined when the stream takes no more settles. */
    settle(op: SettleOp): Promise<SettleOutcome> | undefined;
}
/** What the stream tells its owner. */
interface ConsumeEvents {
    /** Jobs pushed, in order, each using one credit. */
    jobs(jobs: Job$1[]): void;
    /** Ids of jobs leased on this stream that were cancelled. */
    cancelled(ids: string[]): void;
}
/** How a stream ended: its final status (OK after a half-close), and whether the server sent anything. */
interface ConsumeEnd {
    status: StatusLike & {
        metadata: Metadata;
    };
    received: boolean;
}
/** One open Consume stream (see the module). */
declare class ConsumeSession implements SettleRoute {
    #private;
    /** Resolves once the stream has ended, with how. */
    readonly ended: Promise<ConsumeEnd>;
    constructor(call: grpc.ClientDuplexStream<ConsumeRequest, ConsumeResponse>, open: Omit<ConsumeOpen, "credits">, credits: number, limits: {
        maxCredits: number;
        maxSettles: number;
    }, events: ConsumeEvents);
    /** Gives the server `count` more credits (with the next message). */
    grant(count: number): void;
    settle(op: SettleOp): Promise<SettleOutcome> | undefined;
    /**
     * Sends what waits, then half-closes: the server answers the settles it has and ends the stream.
     * Settles from now on go on calls of their own.
     */
    halfClose(): void;
    /** Ends the stream at once (CANCELLED); settles not answered reject. */
    cancel(): void;
}

/**
 * A job's opaque data and its encoding (a MIME type by convention). The data is never empty: a job
 * without data carries no payload at all.
 */
declare class Payload {
    /** The bytes. */
    readonly data: Buffer;
    /** How the bytes are encoded, e.g. `application/json`. */
    readonly encoding: string;
    /** A payload of `data` with `encoding`; prefer the factories {@link Payload.json}, `text` and `bytes`. */
    constructor(data: Uint8Array, encoding: string);
    /** `value` as JSON, encoding `application/json`. */
    static json(value: unknown): Payload;
    /** A string as UTF-8, encoding `text/plain` unless another is given. */
    static text(text: string, encoding?: string): Payload;
    /** Raw bytes, encoding `application/octet-stream` unless another is given. */
    static bytes(data: Uint8Array, encoding?: string): Payload;
    /** The data parsed as JSON (throws a `SyntaxError` if it is not JSON). */
    json<T = unknown>(): T;
    /** The data decoded as UTF-8. */
    text(): string;
}
/** Job priorities: 0 (lowest) to 9 (highest); a higher priority is reserved first. */
declare const Priority: {
    readonly P0: 0;
    readonly P1: 1;
    readonly P2: 2;
    readonly P3: 3;
    readonly P4: 4;
    readonly P5: 5;
    readonly P6: 6;
    readonly P7: 7;
    readonly P8: 8;
    readonly P9: 9;
};
/** A priority from 0 to 9. */
type Priority = (typeof Priority)[keyof typeof Priority];
/**
 * A custom metadata value. On the wire each is a string, an int64, a double or a bool: strings and
 * booleans map directly, a `bigint` and an integral `number` (within ±2^53) are ints, and any other
 * number is a double. Received ints are numbers when they fit in ±2^53, and bigints otherwise.
 */
type CustomValue = string | number | bigint | boolean;

/**
 * {@link TraceContext}: the W3C `traceparent` (and optional `tracestate`) a job carries from its
 * producer to its worker, and the rules a traceparent must follow.
 */
/** A W3C trace context. `traceparent` is `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`. */
interface TraceContext {
    traceparent: string;
    tracestate?: string;
}

/**
 * A reserved job: {@link Job} (payload plus context) and {@link JobCtx}, which carries the lease that
 * ack, nack and extend act on. The lease itself (expiry, worker id, the abort signal the Worker
 * fires when it is lost) is internal and reached through {@link leaseOf}.
 */

/** A reserved job. */
interface Job {
    payload: Payload | undefined;
    ctx: JobCtx;
}
/** @internal What a context needs to act on its lease. */
interface Lease {
    expiresAt: Date;
    readonly workerId: string | undefined;
    readonly controller: AbortController;
    readonly extend: (ctx: JobCtx, extensionMs: number) => Promise<Date>;
    /** The Consume stream the job came on, where its ack, nack and extends go first. */
    readonly route?: SettleRoute | undefined;
}
/** @internal The fields of a job's context, decoded from the wire. */
interface JobFields {
    id: string;
    queue: string;
    jobType: string;
    priority: number;
    attempt: number;
    maxAttempts: number;
    enqueuedAt: Date;
    scheduledAt: Date | undefined;
    custom: Record<string, CustomValue>;
    traceContext: TraceContext | undefined;
}
/** Everything about a reserved job except its payload, and the handle on its lease. */
declare class JobCtx {
    readonly id: string;
    readonly queue: string;
    readonly jobType: string;
    readonly priority: number;
    /** 1 on the first delivery. */
    readonly attempt: number;
    readonly maxAttempts: number;
    readonly enqueuedAt: Date;
    readonly scheduledAt: Date | undefined;
    readonly custom: Record<string, CustomValue>;
    /** The producer's trace context, when it sent a valid one. */
    readonly traceContext: TraceContext | undefined;
    /** The worker id the job was reserved with, when one was given. */
    readonly workerId: string | undefined;
    /**
     * Aborted by a Worker when it loses the job's lease (the reason is a `LeaseLostError`): the job
     * belongs to another attempt, so the handler should stop; its result is ignored. Also aborted when
     * the job was cancelled while the handler ran (the reason is a `LeaseLostError` whose `cause` is a
     * `JobCancelledError`).
     */
    readonly signal: AbortSignal;
    /** @internal Made by the client when it decodes a reserved job. */
    constructor(fields: JobFields, lease: Lease);
    /** When the lease ends, as last granted by the server (updated by every successful extend). */
    get leaseExpiresAt(): Date;
    /** Extends the lease to now + `extensionMs` (the server may clamp it); resolves with the new expiry. */
    extend(extensionMs: number): Promise<Date>;
    toString(): string;
}

/**
 * The request and result types of the producer, consumer and admin calls: {@link EnqueueRequest},
 * {@link EnqueueAck}, {@link ReserveOptions}, {@link NackOptions}, {@link ServerInfo},
 * {@link DeadLetterRecord}, the recurring {@link Schedule} and {@link ScheduleInfo}, and
 * {@link QueuePause}. Durations are milliseconds; timestamps are `Date`s.
 */

/** One job to enqueue. Unset options take the queue's defaults on the server. */
interface EnqueueRequest {
    /** The queue (non-empty). */
    queue: string;
    /** The job type, which picks the Worker handler (non-empty). */
    jobType: string;
    /** The data; omit it for a job without data. */
    payload?: Payload | undefined;
    /** The server drops a job whose key it has seen within its deduplication window. */
    idempotencyKey?: string | undefined;
    /** 0 (lowest) to 9 (highest). */
    priority?: number | undefined;
    /** How many deliveries the job gets before it is dead-lettered. */
    maxAttempts?: number | undefined;
    /** Small typed key/value metadata. */
    custom?: Record<string, CustomValue> | undefined;
    /** Deliver no earlier than this; a time in the past means now. */
    scheduledAt?: Date | undefined;
    /** The job's trace context; by default the active OpenTelemetry span's, when there is one. */
    traceContext?: TraceContext | undefined;
}
/** The server's receipt for an enqueued job. */
interface EnqueueAck {
    jobId: string;
    /** True when the idempotency key matched an earlier job: `jobId` is that job's. */
    deduplicated: boolean;
}
/** What to reserve, and for how long. */
interface ReserveOptions {
    /** Queues to take from, in order of preference (at least one, none empty). */
    queues: string[];
    /** How long the jobs stay leased to this worker, in ms (at least 1). */
    leaseDuration: number;
    /** How long to wait for a job when none is ready, in ms (default 30 000; 0 answers at once). */
    waitTimeout?: number | undefined;
    /** The most jobs to take (server default 1, capped by its `maxReserveBatch`). */
    maxJobs?: number | undefined;
    /** Names this worker to the server; acks, nacks and extends of the jobs send it too. */
    workerId?: string | undefined;
    /** Aborting it cancels the call, which then rejects with a `TransportError` (CANCELLED). */
    signal?: AbortSignal | undefined;
}
/** How to cancel a job. */
interface CancelOptions {
    /** Kept as the dead letter's `lastReason` (at most 1024 bytes). */
    reason?: string | undefined;
}
/** The server's answer to a cancel. */
interface CancelResult {
    jobId: string;
    /**
     * True when a worker held the job: it is dead-lettered at that worker's next extend, ack or nack
     * (which throws `JobCancelledError`), or when its lease runs out. False when it was ready or
     * scheduled and is dead-lettered already. Also true for a repeated cancel of a leased job.
     */
    wasLeased: boolean;
}
/** How to fail a job. */
interface NackOptions {
    /** What happens next (default: the queue's retry policy). */
    retry?: RetryDirective | undefined;
    /** Recorded with the job (an empty reason is not sent). */
    reason?: string | undefined;
}
/** Which dead letters to take. */
interface DrainDeadLettersOptions {
    /** Only this queue's (default: every queue's). */
    queue?: string | undefined;
    /** The most records to take (default 1; 0 returns none without a call). */
    max?: number | undefined;
}
/** The server's version, clock and limits. Durations are in ms, sizes in bytes. */
interface ServerInfo {
    version: string;
    supportedProtocolVersions: string[];
    serverTime: Date;
    restrictsEncodings: boolean;
    allowedEncodings: string[];
    maxPayloadBytes: number;
    maxCustomEntries: number;
    maxCustomTotalBytes: number;
    maxCustomKeyBytes: number;
    maxQueueNameBytes: number;
    maxJobTypeBytes: number;
    maxIdempotencyKeyBytes: number;
    maxScheduleHorizon: number;
    maxEnqueueBatch: number;
    maxReserveBatch: number;
    maxReserveQueues: number;
    maxWaitTimeout: number;
    maxLeaseDuration: number;
    strictQueues: boolean;
    deadLetterRetentionEnabled: boolean;
    /**
     * What the server offers beyond the 0.1 protocol, by name (`"ack_batch"`, `"cancel"`,
     * `"schedules"`, `"pause"`, `"consume"`, ...); empty on 0.1.
     */
    features: string[];
    /** The most credits a Consume stream may have outstanding; 0 from a server without `"consume"`. */
    maxConsumeCredits: number;
    /** The answering node's view of its cluster; `undefined` on a single node (and on 0.1). */
    cluster?: ClusterInfo;
}
/** A cluster as the answering node sees it (every node answers, leader or not). */
interface ClusterInfo {
    nodeId: number;
    /** `"leader"`, `"follower"`, `"candidate"`, `"learner"` or `"shutdown"`. */
    role: string;
    /** The Raft term: it grows with every election. */
    term: number;
    /** The leader's node id, when a leader is known. */
    leaderId?: number;
    /** The leader's client address (`host:port`), when a leader is known; else `""`. */
    leaderAddr: string;
    /** The last log entry this node has applied to its state. */
    lastAppliedIndex?: number;
    members: ClusterMember[];
}
/** A member of the cluster, as the answering node knows it. */
interface ClusterMember {
    id: number;
    /** Its client address (`host:port`). */
    addr: string;
    /** A voter counts towards the quorum; a learner only receives entries. */
    voter: boolean;
    /** Known on the leader only: how many entries of the leader's log this member lacks. */
    replicationLag?: number;
}
/** Why a job was dead-lettered. */
declare const DeadLetterCause: {
    readonly Unspecified: "unspecified";
    readonly AttemptsExhausted: "attempts_exhausted";
    readonly Rejected: "rejected";
    readonly LeaseExpired: "lease_expired";
    readonly Admin: "admin";
    /** Cancelled by `SeppClient.cancel` (or the admin API); a server after 0.1. */
    readonly Cancelled: "cancelled";
};
/** Why a job was dead-lettered. */
type DeadLetterCause = (typeof DeadLetterCause)[keyof typeof DeadLetterCause];
/** The fields of a {@link DeadLetterRecord}. */
interface DeadLetterFields {
    queue: string;
    jobId: string;
    jobType: string;
    payload: Payload | undefined;
    priority: number;
    maxAttempts: number;
    custom: Record<string, CustomValue>;
    traceContext: TraceContext | undefined;
    enqueuedAt: Date;
    scheduledAt: Date | undefined;
    cause: DeadLetterCause;
    failedAt: Date;
    finalAttempt: number;
    lastReason: string | undefined;
}
/** A job that failed for good, as `drainDeadLetters` returns it. */
declare class DeadLetterRecord implements DeadLetterFields {
    readonly queue: string;
    readonly jobId: string;
    readonly jobType: string;
    readonly payload: Payload | undefined;
    readonly priority: number;
    readonly maxAttempts: number;
    readonly custom: Record<string, CustomValue>;
    readonly traceContext: TraceContext | undefined;
    readonly enqueuedAt: Date;
    readonly scheduledAt: Date | undefined;
    readonly cause: DeadLetterCause;
    readonly failedAt: Date;
    readonly finalAttempt: number;
    readonly lastReason: string | undefined;
    constructor(fields: DeadLetterFields);
    /**
     * A fresh request to replay this job on its queue: the same type, payload, priority, max attempts,
     * custom metadata and trace context, but no idempotency key and no schedule, so it runs at once.
     * A max attempts of 0 is left to the queue's default.
     */
    toEnqueueRequest(): EnqueueRequest;
}
/** What a slot does while the schedule's previous job is still queued or running. */
declare const ScheduleOverlap: {
    /** Fire nothing for this slot (the default). */
    readonly Skip: "skip";
    /** Fire it anyway. */
    readonly Allow: "allow";
};
/** What a slot does while the schedule's previous job is still queued or running. */
type ScheduleOverlap = (typeof ScheduleOverlap)[keyof typeof ScheduleOverlap];
/** What happens to slots the server found more than 60 s late (missed, e.g. while it was down). */
declare const ScheduleCatchUp: {
    /** Fire the latest missed slot once (the default). */
    readonly Latest: "latest";
    /** Fire none of them. */
    readonly None: "none";
};
/** What happens to slots the server found more than 60 s late. */
type ScheduleCatchUp = (typeof ScheduleCatchUp)[keyof typeof ScheduleCatchUp];
/**
 * The job a schedule fires at each slot: an {@link EnqueueRequest} without the per-job fields
 * (each slot's job gets an id derived from the schedule id and the slot instead of a key).
 */
type ScheduleJob = Omit<EnqueueRequest, "idempotencyKey" | "scheduledAt" | "traceContext">;
/**
 * A recurring schedule: the server enqueues `job` once per slot of its cadence. Give exactly one
 * cadence: `cron` (five fields, or six with seconds first) read in `timeZone` (an IANA name such as
 * `"Europe/Zurich"`, default `"UTC"`), or `every` (ms, at least 1000, counted from when the schedule
 * was created or last replaced). Upserting a schedule with an existing `id` replaces it.
 */
interface Schedule {
    /** 1 to 128 bytes (UTF-8), no control characters. */
    id: string;
    /** The template of every job fired; must not set idempotencyKey, scheduledAt or traceContext. */
    job: ScheduleJob;
    /** A cron expression; set this or `every`. */
    cron?: string | undefined;
    /** The IANA time zone `cron` is read in (default "UTC"); only with `cron`. */
    timeZone?: string | undefined;
    /** An interval in ms (at least 1000); set this or `cron`. */
    every?: number | undefined;
    /** Default {@link ScheduleOverlap.Skip}. */
    overlap?: ScheduleOverlap | undefined;
    /** Default {@link ScheduleCatchUp.Latest}. */
    catchUp?: ScheduleCatchUp | undefined;
}
/**
 * A schedule as the server keeps it: its definition (with the defaults filled in: `timeZone` for a
 * cron schedule, `overlap` and `catchUp`) and what it has done so far.
 */
interface ScheduleInfo {
    definition: Schedule & {
        overlap: ScheduleOverlap;
        catchUp: ScheduleCatchUp;
    };
    /** The next slot; undefined if the cadence has no further slot. */
    nextFireAt: Date | undefined;
    /** The latest slot the server handled (fired or skipped); undefined before the first. */
    lastSlotAt: Date | undefined;
    /** The last job the schedule fired; undefined before the first. */
    lastJobId: string | undefined;
    /** How many jobs it has fired; replacing the schedule keeps the count. */
    fired: number;
    /** When it was created or last replaced (an interval's slots count from it). */
    createdAt: Date;
}
/**
 * The queue name that stands for every queue in `pauseQueue` and `resumeQueue` (also queues that do
 * not exist yet), and that {@link QueuePause.queue} holds for the pause of every queue.
 */
declare const ALL_QUEUES = "";
/** How to pause a queue. */
interface PauseOptions {
    /** When the pause ends by itself; must be in the future. Unset: until resumed. */
    until?: Date | undefined;
    /** Kept in the server's audit log (at most 1024 bytes). */
    reason?: string | undefined;
}
/** A paused queue: reserves skip it until `until`. */
interface QueuePause {
    /** The queue; {@link ALL_QUEUES} (`""`) for the pause of every queue. */
    queue: string;
    /** When the pause ends by itself; undefined: until resumed. */
    until: Date | undefined;
}

/** A connection to a sepp server. Every method returns a Promise; `close()` ends the connection. */
declare class SeppClient {
    #private;
    /** The retry policy of enqueue, cancel, the schedule and pause calls, ack, nack, extend and getServerInfo. */
    readonly retryPolicy: RetryPolicy;
    /** The deadline of every call except reserve, in ms. */
    readonly rpcTimeout: number;
    /** Where the client's diagnostics go (the Worker's too, unless it is given its own). */
    readonly logger: Logger;
    private constructor();
    /**
     * Connects to `addr` (`host:port`, `http://host:port` or `https://host:port`) and resolves once the
     * connection is up; rejects with a `ConnectError` (or `InvalidApiKeyError`, `ValidationError`).
     */
    static connect(addr: string, options?: ConnectOptions): Promise<SeppClient>;
    /** Closes the connection (every one, after redirects); calls in flight fail with a `TransportError`. */
    close(): void;
    /** Enqueues one job; a rejection throws `JobRejectedError`. */
    enqueue(job: EnqueueRequest): Promise<EnqueueAck>;
    /**
     * Enqueues jobs, each accepted or rejected on its own: one result per job, in order, where a
     * rejection is a value (narrow with `isJobRejection`). An empty batch throws `EmptyBatchError`.
     */
    enqueueBatch(jobs: readonly EnqueueRequest[]): Promise<(EnqueueAck | JobRejection)[]>;
    /**
     * Enqueues jobs all or nothing: either every job is written (their acks come back in order) or
     * none is, and `BatchValidationError` lists every refused job.
     */
    enqueueAtomic(jobs: readonly EnqueueRequest[]): Promise<EnqueueAck[]>;
    /**
     * Cancels a job by id (a server with the feature `"cancel"`). A ready or scheduled job is
     * dead-lettered at once (cause `cancelled`, with `reason` as its `lastReason`; kept only when the
     * server retains dead letters) and `wasLeased` is false. A leased job is marked (`wasLeased` true,
     * also when cancelled again): its worker's next extend, ack or nack throws `JobCancelledError` and
     * dead-letters it, or its lease runs out. Either way it is never delivered again. Throws
     * `JobNotFoundError` for an unknown or finished job, `JobDeadLetteredError` for a dead letter and
     * `InvalidRequestError` for a malformed id or a reason over 1024 bytes.
     */
    cancel(jobId: string, options?: CancelOptions): Promise<CancelResult>;
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
    upsertSchedule(schedule: Schedule): Promise<ScheduleInfo>;
    /**
     * Deletes a schedule by id; resolves to false if there was no such schedule. The jobs it fired
     * stay. A retry whose first attempt reached the server resolves to false.
     */
    deleteSchedule(id: string): Promise<boolean>;
    /**
     * Every schedule the server keeps, sorted by id. One this client cannot read (say, with a cadence
     * of a newer server) is skipped with a warning, as drainDeadLetters does with a malformed record.
     */
    listSchedules(): Promise<ScheduleInfo[]>;
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
    pauseQueue(queue: string, options?: PauseOptions): Promise<QueuePause>;
    /**
     * Lifts the pause of a queue; resolves to false if it was not paused. A reserve waiting on the
     * queue is served at once. `ALL_QUEUES` lifts the pause of every queue only: queues paused by
     * name stay paused. A retry whose first attempt reached the server resolves to false.
     */
    resumeQueue(queue: string): Promise<boolean>;
    /**
     * Every pause the server keeps: the pause of every queue first, then by queue name. The server lifts
     * a pause by itself once its `until` has passed; it is listed no more. One this client cannot read
     * is skipped with a warning, as listSchedules does.
     */
    listPauses(): Promise<QueuePause[]>;
    /**
     * Reserves up to `maxJobs` ready jobs from the first listed queue that has any, waiting up to
     * `waitTimeout`; resolves with `null` when nothing became ready. Not retried under the retry policy
     * (call it again), but on UNAVAILABLE while a cluster fails over, within its failover window.
     * Malformed jobs in the answer are skipped with a warning. Strict-mode servers reject undeclared
     * queues with `UnknownQueuesError`.
     */
    reserve(options: ReserveOptions): Promise<Job[] | null>;
    /**
     * @internal Opens a `Consume` stream on the current connection (the Worker's streaming mode; see
     * `consume.ts`). `ended` resolves with how the stream ended, and whether the client switched to
     * the leader a follower named (then reopening at once reaches it). An UNAVAILABLE naming no
     * leader sends the next call or stream to another node, as for unary calls.
     */
    openConsume(options: {
        queues: string[];
        leaseDuration: number;
        workerId: string;
        credits: number;
        maxCredits: number;
        maxSettles: number;
    }, events: {
        jobs(jobs: Job[]): void;
        cancelled(ids: string[]): void;
    }): {
        session: ConsumeSession;
        ended: Promise<ConsumeEnd & {
            redirected: boolean;
        }>;
    };
    /**
     * Completes a job: the server deletes it. Throws `JobNotFoundError` or `AttemptMismatchError` when
     * the lease is gone, `JobCancelledError` when the job was cancelled. Unless `coalesceAcks` is
     * false, the acks made in one turn of the event loop share one `AckBatch` call (see `acks.ts`); a
     * traced ack (one whose span context would be propagated) keeps its own call, so the server's
     * span is its child.
     */
    ack(ctx: JobCtx): Promise<void>;
    /**
     * Fails a job: it is retried as `retry` says (default: the queue's policy), or dead-lettered after
     * its last attempt, with `reason` recorded. Resolves with whether the job was dead-lettered.
     */
    nack(ctx: JobCtx, options?: NackOptions): Promise<boolean>;
    /**
     * Moves the job's lease deadline to now + `extensionMs` (the server may clamp it) and resolves with
     * the new deadline, which `ctx.leaseExpiresAt` reflects from then on.
     */
    extend(ctx: JobCtx, extensionMs: number): Promise<Date>;
    /**
     * The server's version, clock, limits and, on a cluster's node, its view of the cluster. An answer
     * with a cluster tells the client that it talks to a cluster: its calls ride a failover from then on
     * (`RetryPolicy.failoverWindow`), and may ask any member who leads.
     */
    getServerInfo(): Promise<ServerInfo>;
    /**
     * Removes and returns up to `max` (default 1) of the oldest dead-letter records, of one queue or
     * all. Destructive, so never retried. `max: 0` returns `[]` without a call; an empty answer can
     * also mean the server keeps no dead letters (`ServerInfo.deadLetterRetentionEnabled`). Malformed
     * records are skipped with a warning.
     */
    drainDeadLetters(options?: DrainDeadLettersOptions): Promise<DeadLetterRecord[]>;
}

/** The package version, sent in the `user-agent` of every connection (kept equal to package.json by a test). */
declare const VERSION = "0.2.0";

declare const BRAND: unique symbol;
/**
 * Thrown by a handler to nack its job: `retry` (the queue's retry policy), `retryAfter` (after a
 * delay) or `permanent` (dead-letter now). Anything else a handler throws is also nacked for retry,
 * after a backoff, and logged as an error.
 */
declare class HandlerError extends SeppError {
    readonly kind: "retry" | "retryAfter" | "permanent";
    readonly reason: string;
    /** The delay in ms, for `retryAfter`. */
    readonly delay?: number | undefined;
    name: string;
    readonly [BRAND] = true;
    private constructor();
    /** Nack for a retry under the queue's retry policy. */
    static retry(reason: string): HandlerError;
    /** Nack for a retry after `delayMs`. */
    static retryAfter(reason: string, delayMs: number): HandlerError;
    /** Nack to the dead-letter store, whatever attempts are left. */
    static permanent(reason: string): HandlerError;
    /** Whether `error` is a HandlerError, also across copies of this package (ESM and CJS). */
    static is(error: unknown): error is HandlerError;
}

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

/** A job handler: returning acks the job, throwing nacks it (see {@link HandlerError}). */
type Handler = (payload: Payload | undefined, ctx: JobCtx) => Promise<void> | void;

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

/** The options of a {@link Worker}. Durations are milliseconds. */
interface WorkerOptions {
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
declare class ShutdownHandle {
    #private;
    /** Stop reserving, finish the jobs in flight, then let `run()` resolve. */
    shutdown(): void;
    /** Whether shutdown was asked for. */
    get isShutdown(): boolean;
    /** Aborts on shutdown. */
    get signal(): AbortSignal;
}
/** Runs handlers for the jobs of some queues. Register handlers with `handle`, then `await run()`. */
declare class Worker {
    #private;
    /** The worker id sent with every reserve, ack, nack and extend. */
    readonly workerId: string;
    constructor(client: SeppClient, options: WorkerOptions);
    /** Runs `handler` for jobs of `jobType`; chainable. A second handler for one type throws. */
    handle(jobType: string, handler: Handler): this;
    /** Runs `handler` for jobs whose type has no handler of its own (replacing an earlier one); chainable. */
    catchAll(handler: Handler): this;
    /** The handle that stops this Worker. */
    shutdownHandle(): ShutdownHandle;
    /** Processes jobs until shut down; resolves once the jobs in flight are settled. Runs once at a time. */
    run(): Promise<void>;
}

export { ALL_QUEUES, AttemptMismatchError, BatchResultCountMismatchError, BatchValidationError, type CancelOptions, type CancelResult, ClientError, type ClusterInfo, type ClusterMember, ConnectError, type ConnectOptions, type CustomValue, DeadLetterCause, type DeadLetterFields, DeadLetterRecord, type DrainDeadLettersOptions, EmptyBatchError, type EnqueueAck, type EnqueueRequest, type Handler, HandlerError, InvalidApiKeyError, InvalidRequestError, type Job, JobCancelledError, JobCtx, JobDeadLetteredError, JobNotFoundError, JobRejectedError, type JobRejection, type JobRejectionKind, type JobValidationError, LeaseError, LeaseLostError, type LogMeta, type Logger, MalformedResponseError, type NackOptions, OverloadedError, type PauseOptions, Payload, Priority, type QueuePause, type ReserveOptions, RetryDirective, RetryPolicy, type RetryPolicyOptions, type Schedule, ScheduleCatchUp, type ScheduleInfo, type ScheduleJob, ScheduleLimitError, ScheduleOverlap, SeppClient, SeppError, type ServerInfo, ServerInternalError, ShutdownHandle, type TraceContext, TransportError, UnauthenticatedError, UnexpectedStatusError, UnknownQueuesError, VERSION, ValidationError, Worker, type WorkerOptions, describeJobRejection, isJobRejection };
