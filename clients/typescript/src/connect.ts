/**
 * Opening a connection: the options of {@link SeppClient.connect}, address parsing (`host:port`,
 * `http://`, `https://`), the grpc-js channel options (keepalive, user agent, message size, TLS name
 * override), credentials, the API key header, and the eager first connection with its root cause.
 */
import { X509Certificate } from "node:crypto";
import { createSecureContext } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { ConnectError, InvalidApiKeyError, ValidationError } from "./errors.js";
import type { Logger } from "./logger.js";
import type { RetryPolicy } from "./retry.js";
import { USER_AGENT } from "./version.js";

/** The options of `SeppClient.connect`. Durations are milliseconds. */
export interface ConnectOptions {
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

/** HTTP/2 keepalive: ping this often, even while idle, so proxies keep long polls open... */
const KEEPALIVE_TIME_MS = 30_000;
/** ...and drop the connection when a ping is not answered within this. */
const KEEPALIVE_TIMEOUT_MS = 10_000;

export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
export const DEFAULT_RPC_TIMEOUT_MS = 30_000;

/** The host:port to dial and whether TLS is on. `https://` or any TLS option means TLS. */
export function parseAddress(addr: string, tlsRequested: boolean): { target: string; tls: boolean } {
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

/** The `authorization` header value for an API key, rendered once. */
export function authorizationHeader(apiKey: string): string {
  if (typeof apiKey !== "string" || !/^[\x20-\x7e]+$/.test(apiKey) || apiKey.trim() === "") {
    throw new InvalidApiKeyError();
  }
  return `Bearer ${apiKey}`;
}

/** The grpc-js channel options for these connect options. */
export function channelOptions(options: ConnectOptions): grpc.ChannelOptions {
  const channel: grpc.ChannelOptions = {
    "grpc.keepalive_time_ms": KEEPALIVE_TIME_MS,
    "grpc.keepalive_timeout_ms": KEEPALIVE_TIMEOUT_MS,
    "grpc.keepalive_permit_without_calls": 1,
    "grpc.primary_user_agent": USER_AGENT,
    // The server publishes no service config; skip the DNS TXT lookup for one.
    "grpc.service_config_disable_resolution": 1,
  };
  if (options.maxReceiveMessageBytes !== undefined) {
    const limit = options.maxReceiveMessageBytes;
    if (!Number.isInteger(limit) || limit < 1) {
      throw new ValidationError(`maxReceiveMessageBytes must be a positive integer (got ${String(limit)})`);
    }
    channel["grpc.max_receive_message_length"] = limit;
  }
  if (options.tlsDomain !== undefined) {
    channel["grpc.ssl_target_name_override"] = options.tlsDomain;
    channel["grpc.default_authority"] = options.tlsDomain;
  }
  return channel;
}

/**
 * The channel credentials: plaintext, or TLS trusting the given CA or else Node's default trust
 * store (its bundled roots plus any added with NODE_EXTRA_CA_CERTS or the system-store flags).
 */
export function credentials(tls: boolean, options: ConnectOptions): grpc.ChannelCredentials {
  if (!tls) return grpc.credentials.createInsecure();
  const ca = options.tlsCaCert === undefined ? undefined : Buffer.from(options.tlsCaCert);
  // Node ignores a CA it cannot parse; refuse it here instead of failing the handshake later.
  if (ca !== undefined) new X509Certificate(ca);
  const context = ca === undefined ? createSecureContext() : createSecureContext({ ca });
  return grpc.credentials.createFromSecureContext(context);
}

/**
 * Connects `client`'s channel within `timeoutMs`. A channel that fails its first attempt (refused,
 * unresolvable, bad certificate) fails at once, with the root cause grpc-js recorded.
 */
export async function connectChannel(client: grpc.Client, addr: string, timeoutMs: number): Promise<void> {
  const channel = client.getChannel();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = channel.getConnectivityState(true);
    if (state === grpc.connectivityState.READY) return;
    if (state === grpc.connectivityState.TRANSIENT_FAILURE || state === grpc.connectivityState.SHUTDOWN) {
      throw new ConnectError(addr, await failureReason(client));
    }
    const changed = await new Promise<boolean>((resolve) =>
      channel.watchConnectivityState(state, deadline, (error) => resolve(error === undefined)),
    );
    if (!changed) throw new ConnectError(addr, `no connection within ${timeoutMs} ms`);
  }
}

/** The last connection error, read from the failure of a call made on the failed channel. */
function failureReason(client: grpc.Client): Promise<string> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      (value: Buffer) => value,
      (value: Buffer) => value,
      Buffer.alloc(0),
      new grpc.Metadata(),
      { deadline: Date.now() + 1_000 },
      (error) => {
        const details = error?.details ?? "the channel failed";
        const reason = details
          .replace(/^No connection established\. Last error: /, "")
          .replace(/^Error: /, "")
          .replace(/\.? Resolution note: $/, "");
        resolve(reason);
      },
    );
  });
}
