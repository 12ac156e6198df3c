/**
 * Against a real three-node cluster (three sepp processes on loopback made one cluster with
 * `sepp cluster init`): getServerInfo describes the cluster, and a client with the default retry
 * policy rides the kill of the leader it was given without an error.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, test } from "node:test";
import { SeppClient } from "../../src/index.js";
import { serverBinary, TestServer } from "../support/server.js";

/** How long the cluster may take to elect a leader (a follower stands after 0.6 to 0.8 s without one, by default). */
const ELECTION_MS = 30_000;

const nodes: TestServer[] = [];
after(async () => {
  for (const node of nodes) await node.stop();
});

async function startCluster(): Promise<TestServer[]> {
  const raft: string[] = [];
  for (const id of [1, 2, 3]) {
    const node = await TestServer.start({
      tail: `[cluster]\nnode_id = ${id}\nlisten_addr = "127.0.0.1:0"\n`,
    });
    nodes.push(node);
    const line = await node.waitForLog(/cluster node listening/);
    const match = /127\.0\.0\.1:(\d+)/.exec(line);
    assert.ok(match, line);
    raft.push(`127.0.0.1:${match[1]}`);
  }
  const peers = raft.slice(1).flatMap((addr) => ["--peer", addr]);
  execFileSync(serverBinary(), ["cluster", "init", "--node", raft[0] as string, ...peers], { stdio: "pipe" });
  return nodes.slice(-3);
}

/**
 * The node the first node names as leader, once that node says it leads itself (a node just
 * elected says `candidate` until a majority has answered it as leader).
 */
async function leaderOf(cluster: TestServer[]): Promise<TestServer> {
  const deadline = Date.now() + ELECTION_MS;
  for (;;) {
    const client = await SeppClient.connect((cluster[0] as TestServer).addr);
    const info = await client.getServerInfo();
    client.close();
    assert.ok(info.cluster, "a node of a cluster says so");
    const leader = cluster.find((node) => node.addr === info.cluster?.leaderAddr);
    if (leader) {
      const own = await SeppClient.connect(leader.addr);
      const itself = await own.getServerInfo();
      own.close();
      if (itself.cluster?.role === "leader") return leader;
    }
    assert.ok(Date.now() < deadline, `no leader within ${ELECTION_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test("the default policy rides the kill of the leader the client was given", async () => {
  const cluster = await startCluster();
  const leader = await leaderOf(cluster);
  const client = await SeppClient.connect(leader.addr);
  const info = await client.getServerInfo();
  assert.equal(info.cluster?.role, "leader");
  assert.deepEqual(
    info.cluster?.members.map((member) => member.addr).sort(),
    cluster.map((node) => node.addr).sort(),
  );
  const before = await client.enqueue({ queue: "ride", jobType: "before" });

  await leader.stop();
  // No idempotency key: only UNAVAILABLE is ridden, which is what a dead leader answers.
  const after = await client.enqueue({ queue: "ride", jobType: "after" });

  const jobs = (await client.reserve({ queues: ["ride"], leaseDuration: 30_000, maxJobs: 10 })) ?? [];
  assert.deepEqual(jobs.map((job) => job.ctx.id).sort(), [before.jobId, after.jobId].sort());
  for (const job of jobs) await client.ack(job.ctx);
  client.close();
});
