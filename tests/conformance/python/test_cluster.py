"""The official sepp-py 0.1 client against a three-node cluster, pointed at a follower: 0.1
clients do not follow `sepp-leader`, so the follower forwards their calls to the leader
(docs/cluster.md#any-client-against-any-node). sepp 0.1.1 has no such forwarding."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sepp import EnqueueRequest, SeppClient

from harness import SeppServer, running_server, sepp_binary
from helpers import assert_empty, reserve_one

pytestmark = pytest.mark.improvement

ELECTION_TIMEOUT_S = 30.0
_RAFT_PORT = re.compile(r"addr=127\.0\.0\.1:(\d+)")


def cluster_status(raft_addr: str) -> dict[str, Any]:
    out = subprocess.run(
        [sepp_binary(), "cluster", "status", "--json", "--node", raft_addr],
        capture_output=True,
        check=True,
    )
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[tuple[SeppServer, str]]]:
    """Three nodes made one cluster with `sepp cluster init`: (server, its Raft address) each."""
    with (
        running_server(tmp_path_factory, node(1)) as one,
        running_server(tmp_path_factory, node(2)) as two,
        running_server(tmp_path_factory, node(3)) as three,
    ):
        nodes = [(srv, raft_addr(srv)) for srv in (one, two, three)]
        raft = [addr for _, addr in nodes]
        subprocess.run(
            [sepp_binary(), "cluster", "init", "--node", raft[0], "--peer", raft[1], "--peer", raft[2]],
            capture_output=True,
            check=True,
        )
        yield nodes


def node(node_id: int) -> dict[str, Any]:
    return {"cluster": {"node_id": node_id, "listen_addr": "127.0.0.1:0"}}


def raft_addr(srv: SeppServer) -> str:
    line = srv.wait_for_log("cluster node listening")
    match = _RAFT_PORT.search(line)
    assert match is not None, line
    return f"127.0.0.1:{match.group(1)}"


def a_follower(nodes: list[tuple[SeppServer, str]]) -> tuple[SeppServer, str]:
    """A node that follows a leader it knows, once the cluster has one."""
    deadline = time.monotonic() + ELECTION_TIMEOUT_S
    while True:
        for srv, raft in nodes:
            status = cluster_status(raft)
            if status["role"] == "follower" and status.get("leader_id") is not None:
                return srv, raft
        assert time.monotonic() < deadline, "no follower knew a leader"
        time.sleep(0.05)


async def test_sepp_py_0_1_enqueues_reserves_and_acks_through_a_follower(cluster, new_queue):
    follower, raft = a_follower(cluster)
    q = new_queue()
    async with await SeppClient.connect(follower.addr) as client:
        # The leader may not serve yet just after its election: the follower then refuses.
        deadline = time.monotonic() + ELECTION_TIMEOUT_S
        while True:
            try:
                enqueued = await client.enqueue(EnqueueRequest(q, "t"))
                break
            except Exception as error:  # whatever 0.1 raises for UNAVAILABLE
                assert time.monotonic() < deadline, f"no enqueue through the follower: {error!r}"
                await asyncio.sleep(0.05)
        job = await reserve_one(client, q)
        assert job.ctx.id == enqueued.job_id
        await client.ack(job.ctx)
        await assert_empty(client, q)
    # The node stayed a follower: the calls were forwarded, not served there.
    assert cluster_status(raft)["role"] == "follower"
