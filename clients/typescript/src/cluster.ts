/**
 * Following the cluster leader: a sepp cluster's followers answer every QueueService call
 * UNAVAILABLE with the metadata `sepp-leader: host:port` when they know the leader, having executed
 * nothing. The client then dials that address (see {@link Connections}) and re-sends the call, at
 * most {@link MAX_REDIRECTS} times per call.
 *
 * A {@link Connection} is one dialed address; {@link Connections} holds the one calls go to, the
 * address the client was configured with (its seed), and the connections switched away from, each
 * closed once its last call in flight has ended (closing it at once would fail calls still waiting
 * for their connection).
 */
import type * as grpc from "@grpc/grpc-js";
import { status as Status } from "@grpc/grpc-js";
import type { Logger } from "./logger.js";

/** The metadata entry a follower names the leader's client address (`host:port`) in. */
export const LEADER_METADATA = "sepp-leader";

/** How many redirects one call follows before its UNAVAILABLE surfaces. */
export const MAX_REDIRECTS = 3;

/**
 * The leader a failure names: the `host:port` in `sepp-leader` of an UNAVAILABLE status, or
 * undefined for any other failure (an UNAVAILABLE without it: the node knows no leader, or is down).
 */
export function leaderFrom(error: unknown): string | undefined {
  if ((error as { code?: unknown } | null)?.code !== Status.UNAVAILABLE) return undefined;
  const metadata = (error as { metadata?: unknown }).metadata as { get?: unknown } | null | undefined;
  if (metadata === undefined || metadata === null || typeof metadata.get !== "function") return undefined;
  let values: unknown[];
  try {
    values = (metadata as { get(key: string): unknown[] }).get(LEADER_METADATA);
  } catch {
    return undefined;
  }
  for (const value of values) {
    const address = String(value).trim();
    // A host:port: no scheme, path or whitespace.
    if (address !== "" && !/[\s/]/.test(address)) return address;
  }
  return undefined;
}

/** Whether a failure is an UNAVAILABLE that names no leader. */
export function isLeaderless(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === Status.UNAVAILABLE && leaderFrom(error) === undefined;
}

/** One dialed address: its grpc-js client and how many calls are in flight on it. */
export class Connection {
  #inFlight = 0;
  /** Set once retired: called when the connection closes. */
  #onRetiredClose: (() => void) | undefined;
  #closed = false;

  constructor(
    /** The `host:port` dialed. */
    readonly target: string,
    readonly grpc: grpc.Client,
  ) {}

  /** Counts a call that starts on this connection; pair with {@link end}. */
  begin(): void {
    this.#inFlight++;
  }

  /** Counts a call that ended; a retired connection closes with its last call. */
  end(): void {
    this.#inFlight--;
    if (this.#onRetiredClose !== undefined && this.#inFlight === 0) this.close();
  }

  /**
   * No new call starts here: closes now if idle, else once the last call in flight ends, and then
   * calls `onClose`.
   */
  retire(onClose: () => void): void {
    this.#onRetiredClose = onClose;
    if (this.#inFlight === 0) this.close();
  }

  /** Closes the grpc-js client (once); calls still in flight on it fail. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.grpc.close();
    this.#onRetiredClose?.();
  }

  get closed(): boolean {
    return this.#closed;
  }
}

/**
 * The connection calls go to, switched by redirects. Switching is synchronous, so concurrent calls
 * see one current connection at a time; a call whose failure came from a connection that is no
 * longer current (another call switched already) takes the current one instead of switching again.
 */
export class Connections {
  #current: Connection;
  /** Connections switched away from that still have calls in flight. */
  readonly #retired = new Set<Connection>();
  #closed = false;
  /**
   * Whether the client knows it talks to a cluster (a node named the leader, or `getServerInfo`
   * answered with `cluster`): its calls then ride a failover (see `retry.ts`).
   */
  #inCluster = false;
  /** The members' client addresses, sorted, from the last `getServerInfo` that listed them. */
  #members: string[] = [];

  constructor(
    /** The address the client was configured with. */
    readonly seed: string,
    first: grpc.Client,
    /** Dials an address with the client's credentials and channel options. */
    readonly dial: (target: string) => grpc.Client,
    readonly logger: Logger,
  ) {
    this.#current = new Connection(seed, first);
  }

  /** The connection a call starts on. */
  get current(): Connection {
    return this.#current;
  }

  /**
   * After `from` answered that the leader is at `leader`: makes the leader's connection current,
   * unless another call switched away from `from` already (then the current one stands). False when
   * the address cannot be dialed: the call then fails as it did.
   */
  follow(from: Connection, leader: string, operation: string): boolean {
    if (this.#closed || from !== this.#current || leader === from.target) return true;
    if (!this.#switchTo(leader, operation)) return false;
    this.logger.info?.(`following the cluster leader to ${leader}`, {
      operation,
      from: from.target,
      leader,
      seed: this.seed,
    });
    return true;
  }

  /** Whether the client knows it talks to a cluster. */
  get inCluster(): boolean {
    return this.#inCluster;
  }

  /** Records that the client talks to a cluster, and its members' client addresses (an empty list keeps those known). */
  learnedCluster(members: string[]): void {
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
  lost(from: Connection, operation: string): void {
    if (this.#closed || from !== this.#current) return;
    const target = this.#nextAfter(from.target);
    if (target === undefined || !this.#switchTo(target, operation)) return;
    this.logger.info?.(`the cluster node ${from.target} is unavailable; asking ${target} who leads`, {
      operation,
      from: from.target,
      to: target,
      seed: this.seed,
    });
  }

  #nextAfter(target: string): string | undefined {
    if (this.#members.length === 0) return target === this.seed ? undefined : this.seed;
    const next = this.#members[(this.#members.indexOf(target) + 1) % this.#members.length];
    return next === target ? undefined : next;
  }

  /** Closes every connection; calls in flight fail. */
  close(): void {
    this.#closed = true;
    this.#current.close();
    for (const connection of [...this.#retired]) connection.close();
  }

  /** Makes a new connection to `target` current and retires the old one; false if grpc-js refuses the address. */
  #switchTo(target: string, operation: string): boolean {
    let client: grpc.Client;
    try {
      client = this.dial(target);
    } catch (error) {
      this.logger.warn(`cannot dial the cluster leader's address ${target}`, {
        operation,
        error: String(error),
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
  get open(): number {
    return this.#retired.size + (this.#current.closed ? 0 : 1);
  }
}
