/**
 * Following the cluster leader without a network: reading `sepp-leader` from a failure, and the
 * connection switching of {@link Connections} with stand-in grpc-js clients (which connections
 * exist, which are closed, and when).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type * as grpc from "@grpc/grpc-js";
import { Metadata, status } from "@grpc/grpc-js";
import { Connections, isLeaderless, LEADER_METADATA, leaderFrom } from "../../src/cluster.js";
import { RecordingLogger } from "../support/helpers.js";

/** A status error as grpc-js raises it, with the given metadata entries. */
function statusError(code: status, entries: Record<string, string> = {}) {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(entries)) metadata.set(key, value);
  return Object.assign(new Error("stub"), { code, details: "stub", metadata });
}

/** A stand-in grpc-js client that only records whether it was closed. */
class FakeClient {
  closed = false;
  constructor(readonly target: string) {}
  close(): void {
    assert.equal(this.closed, false, `${this.target} closed twice`);
    this.closed = true;
  }
}

/** Connections to `seed` whose dials are recorded. */
function connections(seed = "seed:1", dialFails = false) {
  const dialed: FakeClient[] = [];
  const dial = (target: string) => {
    if (dialFails) throw new Error("Could not parse target name");
    const client = new FakeClient(target);
    dialed.push(client);
    return client as unknown as grpc.Client;
  };
  const first = new FakeClient(seed);
  const logger = new RecordingLogger();
  return { set: new Connections(seed, first as unknown as grpc.Client, dial, logger), first, dialed, logger };
}

describe("the leader a failure names", () => {
  test("an UNAVAILABLE with sepp-leader names it; anything else names none", () => {
    assert.equal(
      leaderFrom(statusError(status.UNAVAILABLE, { [LEADER_METADATA]: "10.0.0.2:50051" })),
      "10.0.0.2:50051",
    );
    assert.equal(
      leaderFrom(statusError(status.UNAVAILABLE, { [LEADER_METADATA]: " node-b:7 " })),
      "node-b:7",
    );
    assert.equal(leaderFrom(statusError(status.UNAVAILABLE, { [LEADER_METADATA]: "[::1]:7" })), "[::1]:7");
    assert.equal(leaderFrom(statusError(status.UNAVAILABLE)), undefined);
    assert.equal(leaderFrom(statusError(status.UNAVAILABLE, { [LEADER_METADATA]: "" })), undefined);
    assert.equal(leaderFrom(statusError(status.UNAVAILABLE, { [LEADER_METADATA]: "http://b:7" })), undefined);
    assert.equal(leaderFrom(statusError(status.UNAVAILABLE, { [LEADER_METADATA]: "b:7/x" })), undefined);
    assert.equal(leaderFrom(statusError(status.ABORTED, { [LEADER_METADATA]: "b:7" })), undefined);
    assert.equal(leaderFrom({ code: status.UNAVAILABLE, details: "no metadata" }), undefined);
    assert.equal(leaderFrom(new Error("not a status")), undefined);
    assert.equal(leaderFrom(null), undefined);
  });

  test("leaderless means an UNAVAILABLE naming no leader", () => {
    assert.equal(isLeaderless(statusError(status.UNAVAILABLE)), true);
    assert.equal(isLeaderless(statusError(status.UNAVAILABLE, { [LEADER_METADATA]: "b:7" })), false);
    assert.equal(isLeaderless(statusError(status.DEADLINE_EXCEEDED)), false);
    assert.equal(isLeaderless(undefined), false);
  });
});

describe("switching connections", () => {
  test("following dials the leader with a log line; the old connection closes once idle", () => {
    const { set, first, dialed, logger } = connections();
    const seed = set.current;
    seed.begin();
    assert.equal(set.follow(seed, "leader:2", "Reserve"), true);
    assert.equal(set.current.target, "leader:2");
    assert.deepEqual(
      dialed.map((client) => client.target),
      ["leader:2"],
    );
    assert.deepEqual(logger.messages("info"), ["following the cluster leader to leader:2"]);
    assert.deepEqual(logger.entries[0]?.meta, {
      operation: "Reserve",
      from: "seed:1",
      leader: "leader:2",
      seed: "seed:1",
    });
    assert.equal(first.closed, false, "closed under a call in flight");
    assert.equal(set.open, 2);
    seed.end();
    assert.equal(first.closed, true);
    assert.equal(set.open, 1);
  });

  test("a redirect from a connection already switched away from takes the current one", () => {
    const { set, dialed, logger } = connections();
    const seed = set.current;
    assert.equal(set.follow(seed, "leader:2", "EnqueueBatch"), true);
    assert.equal(set.follow(seed, "other:3", "EnqueueBatch"), true);
    assert.equal(set.follow(seed, "leader:2", "EnqueueBatch"), true);
    assert.equal(set.current.target, "leader:2");
    assert.equal(dialed.length, 1);
    assert.equal(logger.messages("info").length, 1);
    // A node naming itself: the call is re-sent to it, nothing switches.
    const leader = set.current;
    assert.equal(set.follow(leader, "leader:2", "EnqueueBatch"), true);
    assert.equal(set.current, leader);
  });

  test("a followed leader that fails sends the next attempt back to the seed; the seed stays", () => {
    const { set, first, dialed, logger } = connections();
    const seed = set.current;
    set.lost(seed, "Ack");
    assert.equal(set.current, seed, "left the seed");
    set.follow(seed, "leader:2", "Ack");
    const leader = set.current;
    set.lost(leader, "Ack");
    assert.equal(set.current.target, "seed:1");
    assert.deepEqual(
      dialed.map((client) => [client.target, client.closed]),
      [
        ["leader:2", true],
        ["seed:1", false],
      ],
    );
    assert.equal(first.closed, true);
    assert.equal(
      logger.messages("info")[1],
      "the cluster node leader:2 is unavailable; asking seed:1 who leads",
    );
    // A failure of the old leader reported late switches nothing.
    set.lost(leader, "Ack");
    assert.equal(dialed.length, 2);
  });

  test("once the members are known, a node that fails sends the next attempt to the next member", () => {
    const { set } = connections();
    set.learnedCluster(["seed:1", "c:3", "", "b:2", "b:2"]);
    assert.equal(set.inCluster, true);
    set.lost(set.current, "Ack"); // the seed itself, given as the leader, is down
    assert.equal(set.current.target, "b:2"); // the members in address order, round: b:2, c:3, seed:1
    set.lost(set.current, "Ack");
    assert.equal(set.current.target, "c:3");
    set.learnedCluster([]); // an empty list keeps the members known
    set.lost(set.current, "Ack");
    assert.equal(set.current.target, "seed:1");
  });

  test("close closes the current connection and those still finishing calls; nothing switches after", () => {
    const { set, first, dialed } = connections();
    const seed = set.current;
    seed.begin();
    set.follow(seed, "leader:2", "Reserve");
    set.close();
    assert.equal(first.closed, true);
    assert.equal(dialed[0]?.closed, true);
    assert.equal(set.open, 0);
    seed.end(); // its call fails once closed; ending it closes nothing twice
    set.follow(set.current, "other:3", "Reserve");
    set.lost(set.current, "Reserve");
    assert.equal(dialed.length, 1);
  });

  test("an address grpc-js refuses to dial is not followed", () => {
    const { set, logger } = connections("seed:1", true);
    const seed = set.current;
    assert.equal(set.follow(seed, "leader:2", "Extend"), false);
    assert.equal(set.current, seed);
    assert.deepEqual(logger.messages("warn"), ["cannot dial the cluster leader's address leader:2"]);
  });
});
