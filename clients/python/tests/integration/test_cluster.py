"""Against a real three-node cluster (three sepp processes on loopback made one cluster with
`sepp cluster init`): `get_server_info` describes the cluster, and a client with the default
retry policy rides the kill of the leader it was given without an error."""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from sepp import EnqueueRequest, ReserveOptions, SeppClient
from tests.sepp_server import SeppServer, sepp_binary

# How long the cluster may take to elect a leader (a follower stands after 0.6 to 0.8 s without
# one, with the default election timeout).
ELECTION_S = 30.0
_RAFT_ADDR = re.compile(r"127\.0\.0\.1:(\d+)")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[list[SeppServer]]:
    nodes: list[SeppServer] = []
    raft: list[str] = []
    try:
        for node_id in (1, 2, 3):
            config = {"cluster": {"node_id": node_id, "listen_addr": "127.0.0.1:0"}}
            node = SeppServer(tmp_path / f"node-{node_id}", config).start()
            nodes.append(node)
            node.wait_for_lines("cluster node listening", 1)
            line = next(line for line in node.lines if "cluster node listening" in line)
            match = _RAFT_ADDR.search(line)
            assert match, line
            raft.append(f"127.0.0.1:{match.group(1)}")
        peers = [arg for addr in raft[1:] for arg in ("--peer", addr)]
        init = subprocess.run(
            [sepp_binary(), "cluster", "init", "--node", raft[0], *peers],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert init.returncode == 0, init.stderr
        yield nodes
    finally:
        for node in nodes:
            node.kill()


async def leader_of(nodes: list[SeppServer]) -> SeppServer:
    """The node the first node names as leader, once that node says it leads itself (a node
    just elected says `candidate` until a majority has answered it as leader)."""
    deadline = time.monotonic() + ELECTION_S
    while True:
        async with await SeppClient.connect(nodes[0].addr) as client:
            cluster = (await client.get_server_info()).cluster
        assert cluster is not None, "a node of a cluster says so"
        if cluster.leader_addr:
            leader = next(node for node in nodes if node.addr == cluster.leader_addr)
            async with await SeppClient.connect(leader.addr) as client:
                itself = (await client.get_server_info()).cluster
            if itself is not None and itself.is_leader:
                return leader
        assert time.monotonic() < deadline, f"no leader within {ELECTION_S} s"
        await asyncio.sleep(0.05)


async def test_the_default_policy_rides_the_kill_of_the_leader_it_was_given(
    cluster: list[SeppServer],
) -> None:
    leader = await leader_of(cluster)
    async with await SeppClient.connect(leader.addr) as client:
        info = await client.get_server_info()
        assert info.cluster is not None and info.cluster.is_leader
        assert sorted(member.addr for member in info.cluster.members) == sorted(
            node.addr for node in cluster
        )
        before = await client.enqueue(EnqueueRequest("ride", "before"))

        leader.kill()
        # No idempotency key: only UNAVAILABLE is ridden, which is what a dead leader answers.
        after = await client.enqueue(EnqueueRequest("ride", "after"))

        options = ReserveOptions(["ride"], timedelta(seconds=30), max_jobs=10)
        jobs = await client.reserve(options) or []
        assert sorted(job.ctx.id for job in jobs) == sorted([before.job_id, after.job_id])
        for job in jobs:
            await client.ack(job.ctx)
        follower = (await client.get_server_info()).cluster
        assert follower is not None and follower.leader_addr != leader.addr
