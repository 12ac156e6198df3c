"""Following a cluster's leader, against in-process stub nodes (no sepp binary needed).

Node `a` is the address the client is given; it answers as a follower does: UNAVAILABLE, having
executed nothing, with the leader's address in `sepp-leader`. Node `b` is the leader and
answers normally. The tests wait on signals only; `WAIT` just bounds how long.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import grpc
import pytest

from sepp import (
    EnqueueRequest,
    JobCtx,
    OverloadedError,
    Payload,
    RetryPolicy,
    SeppClient,
    TransportError,
    Worker,
)
from sepp import sync as sepp_sync
from sepp._cluster import MAX_REDIRECTS, leader_of
from sepp.v1 import queue_pb2 as pb
from tests.integration.test_connect import make_tls_files
from tests.integration.test_wire import ok, opts, wire_job
from tests.recording_server import Abort, RecordingServer, recording_server

WAIT = 20.0  # the most any signal below is waited for
# The tests of following the leader turn the failover window off, so that a call the cluster
# does not serve fails at once; the window has tests of its own at the end.
RETRY_ONCE = RetryPolicy(
    max_attempts=2,
    initial_backoff=timedelta(milliseconds=1),
    jitter=False,
    failover_window=timedelta(0),
)
NO_FAILOVER = RetryPolicy(failover_window=timedelta(0))


def not_leader(leader: str, *, in_headers: bool = False) -> Abort:
    """A follower's answer naming `leader`: in the trailers, or (`in_headers`) sent as the
    initial metadata the way a trailers-only response carries it."""
    details = f"this node is not the cluster's leader; the leader is at {leader}"
    entry = (("sepp-leader", leader),)
    if in_headers:
        return Abort(grpc.StatusCode.UNAVAILABLE, details, initial=entry)
    return Abort(grpc.StatusCode.UNAVAILABLE, details, trailing=entry)


NO_LEADER = Abort(grpc.StatusCode.UNAVAILABLE, "no leader: an election is running")


@pytest.fixture
async def a() -> AsyncIterator[RecordingServer]:
    async with recording_server() as server:
        yield server


@pytest.fixture
async def b() -> AsyncIterator[RecordingServer]:
    async with recording_server() as server:
        yield server


def follower_of(node: RecordingServer, leader: RecordingServer, *methods: str) -> None:
    for method in methods:
        node.answer(method, not_leader(leader.addr))


async def test_an_enqueue_follows_the_redirect_and_later_calls_go_to_the_leader(
    a: RecordingServer, b: RecordingServer, caplog: pytest.LogCaptureFixture
) -> None:
    follower_of(a, b, "EnqueueBatch", "ListPauses")
    b.answer("EnqueueBatch", ok("from-b"))
    b.answer("ListPauses", pb.ListPausesResponse())
    caplog.set_level(logging.INFO, logger="sepp")
    async with await SeppClient.connect(a.addr) as client:  # the default policy: one attempt
        seed_channel = client.channel
        ack = await client.enqueue(EnqueueRequest("q", "t"))
        assert ack.job_id == "from-b"
        assert [c.method for c in a.calls] == ["EnqueueBatch"]
        (sent,) = b.calls_to("EnqueueBatch")
        assert sent.request.jobs[0].queue == "q" and sent.request.jobs[0].job_type == "t"
        # The channel to the follower was closed when the call left it.
        assert client.channel is not seed_channel
        assert seed_channel.get_state() == grpc.ChannelConnectivity.SHUTDOWN

        assert await client.list_pauses() == []
        await client.enqueue(EnqueueRequest("q", "t"))
    assert [c.method for c in a.calls] == ["EnqueueBatch"]  # a saw no second call
    assert [c.method for c in b.calls] == ["EnqueueBatch", "ListPauses", "EnqueueBatch"]
    switches = [r.getMessage() for r in caplog.records if "following the cluster leader" in r.msg]
    assert switches == [f"following the cluster leader to {b.addr} (from {a.addr})"]


async def test_a_leader_named_in_the_header_block_is_followed_too(
    a: RecordingServer, b: RecordingServer
) -> None:
    a.answer("EnqueueBatch", not_leader(b.addr, in_headers=True))
    b.answer("EnqueueBatch", ok("from-b"))
    async with await SeppClient.connect(a.addr) as client:
        assert (await client.enqueue(EnqueueRequest("q", "t"))).job_id == "from-b"
    assert len(b.calls_to("EnqueueBatch")) == 1


async def test_reserve_ack_and_drain_follow_the_redirect(
    a: RecordingServer, b: RecordingServer
) -> None:
    # Reserve and DrainDeadLetters are never retried; a redirect is no retry.
    follower_of(a, b, "Reserve", "Ack", "AckBatch", "DrainDeadLetters")
    b.answer("Reserve", pb.ReserveResponse(jobs=[wire_job("j1")]))
    b.answer("Ack", pb.AckResponse())
    b.answer("DrainDeadLetters", pb.DrainDeadLettersResponse())
    async with await SeppClient.connect(a.addr) as client:
        jobs = await client.reserve(opts())
        assert jobs is not None and [job.ctx.id for job in jobs] == ["j1"]
        await client.ack(jobs[0])
        assert await client.drain_dead_letters(max_records=5) == []
    assert [c.method for c in a.calls] == ["Reserve"]
    assert [c.method for c in b.calls] == ["Reserve", "Ack", "DrainDeadLetters"]


async def test_a_drain_follows_the_redirect_when_it_is_the_first_call(
    a: RecordingServer, b: RecordingServer
) -> None:
    a.answer("DrainDeadLetters", not_leader(b.addr))
    b.answer("DrainDeadLetters", pb.DrainDeadLettersResponse())
    async with await SeppClient.connect(a.addr) as client:
        assert await client.drain_dead_letters(max_records=5) == []
    assert len(a.calls) == 1 and len(b.calls) == 1


async def test_a_redirect_loop_gives_up_after_three_redirects(
    a: RecordingServer, b: RecordingServer, caplog: pytest.LogCaptureFixture
) -> None:
    follower_of(a, b, "EnqueueBatch", "Reserve")
    follower_of(b, a, "EnqueueBatch", "Reserve")
    async with await SeppClient.connect(a.addr, retry_policy=NO_FAILOVER) as client:
        with pytest.raises(TransportError) as failed:
            await client.enqueue(EnqueueRequest("q", "t"))
        assert failed.value.code == grpc.StatusCode.UNAVAILABLE
        # a -> b -> a -> b, and b's fourth answer is not followed.
        assert len(a.calls) + len(b.calls) == MAX_REDIRECTS + 1 == 4
        assert len(a.calls) == 2 and len(b.calls) == 2
        with pytest.raises(TransportError):
            await client.reserve(opts())
        assert len(a.calls) + len(b.calls) == 8
    assert any("gave up following the cluster leader" in r.msg for r in caplog.records)


async def test_each_attempt_of_the_retry_policy_follows_up_to_three_redirects(
    a: RecordingServer, b: RecordingServer
) -> None:
    follower_of(a, b, "ListPauses")
    follower_of(b, a, "ListPauses")
    async with await SeppClient.connect(a.addr, retry_policy=RETRY_ONCE) as client:
        with pytest.raises(TransportError):
            await client.list_pauses()
    assert len(a.calls) + len(b.calls) == 2 * (MAX_REDIRECTS + 1)


async def test_redirects_do_not_use_up_the_retry_policys_attempts(
    a: RecordingServer, b: RecordingServer, caplog: pytest.LogCaptureFixture
) -> None:
    # The first attempt is redirected and then fails for real; the policy's one retry is left.
    a.answer("ListPauses", not_leader(b.addr))
    b.answer("ListPauses", grpc.StatusCode.RESOURCE_EXHAUSTED, pb.ListPausesResponse())
    async with await SeppClient.connect(a.addr, retry_policy=RETRY_ONCE) as client:
        assert await client.list_pauses() == []
    assert len(a.calls) == 1 and len(b.calls) == 2
    assert any("attempt 2 of 2" in r.getMessage() for r in caplog.records)


async def test_when_the_followed_leader_stops_the_next_call_asks_the_seed_again(
    a: RecordingServer, b: RecordingServer, caplog: pytest.LogCaptureFixture
) -> None:
    follower_of(a, b, "ListPauses")
    b.answer("ListPauses", pb.ListPausesResponse())
    caplog.set_level(logging.INFO, logger="sepp")
    async with await SeppClient.connect(a.addr, retry_policy=NO_FAILOVER) as client:
        await client.list_pauses()
        assert len(a.calls) == 1 and len(b.calls) == 1
        await b.stop()
        a.answer("ListPauses", pb.ListPausesResponse())  # a has become the leader
        with pytest.raises(TransportError) as failed:  # one attempt, no failover window
            await client.list_pauses()
        assert failed.value.code == grpc.StatusCode.UNAVAILABLE
        assert len(a.calls) == 1
        assert await client.list_pauses() == []
        assert len(a.calls) == 2
    assert any(f"asking {a.addr} who leads" in r.getMessage() for r in caplog.records)


async def test_when_the_followed_leader_stops_the_retry_goes_to_the_seed(
    a: RecordingServer, b: RecordingServer
) -> None:
    follower_of(a, b, "EnqueueBatch")
    b.answer("EnqueueBatch", ok("from-b"))
    async with await SeppClient.connect(a.addr, retry_policy=RETRY_ONCE) as client:
        await client.enqueue(EnqueueRequest("q", "t"))
        await b.stop()
        a.answer("EnqueueBatch", ok("from-a"))  # a has become the leader
        assert (await client.enqueue(EnqueueRequest("q", "t"))).job_id == "from-a"
    assert len(a.calls) == 2 and len(b.calls) == 1


async def test_the_seed_asked_again_can_name_a_new_leader(
    a: RecordingServer, b: RecordingServer
) -> None:
    follower_of(a, b, "ListPauses")
    b.answer("ListPauses", pb.ListPausesResponse())
    async with (
        recording_server() as c,
        await SeppClient.connect(a.addr, retry_policy=RETRY_ONCE) as client,
    ):
        await client.list_pauses()
        await b.stop()
        follower_of(a, c, "ListPauses")  # c won the election
        c.answer("ListPauses", pb.ListPausesResponse())
        assert await client.list_pauses() == []  # b refused; the retry: a, then c
        assert await client.list_pauses() == []
        assert len(a.calls) == 2 and len(c.calls) == 2


async def test_a_seed_without_a_leader_keeps_its_address(
    a: RecordingServer, b: RecordingServer
) -> None:
    a.answer("ListPauses", NO_LEADER, not_leader(b.addr))
    b.answer("ListPauses", pb.ListPausesResponse())
    async with await SeppClient.connect(a.addr, retry_policy=RETRY_ONCE) as client:
        seed_channel = client.channel
        assert await client.list_pauses() == []  # an election, then the redirect
    assert len(a.calls) == 2 and len(b.calls) == 1
    assert seed_channel.get_state() == grpc.ChannelConnectivity.SHUTDOWN


async def test_concurrent_calls_switch_once_and_a_call_in_flight_finishes_on_its_channel(
    a: RecordingServer, b: RecordingServer, caplog: pytest.LogCaptureFixture
) -> None:
    # a leads at first and holds a reserve open; then it loses the leadership to b.
    arrived, release = asyncio.Event(), asyncio.Event()

    async def held_reserve(_: pb.ReserveRequest) -> pb.ReserveResponse:
        arrived.set()
        await release.wait()
        return pb.ReserveResponse(jobs=[wire_job("held")])

    a.answer("Reserve", held_reserve)
    follower_of(a, b, "ListPauses")
    b.answer("ListPauses", pb.ListPausesResponse())
    b.answer("Ack", pb.AckResponse())
    caplog.set_level(logging.INFO, logger="sepp")
    async with await SeppClient.connect(a.addr) as client:
        seed_channel = client.channel
        reserving = asyncio.ensure_future(client.reserve(opts()))
        await asyncio.wait_for(arrived.wait(), WAIT)
        results = await asyncio.gather(*(client.list_pauses() for _ in range(5)))
        assert results == [[]] * 5
        assert len(a.calls_to("ListPauses")) == 5 and len(b.calls_to("ListPauses")) == 5
        # The held reserve still runs on a's channel, which stays open for it.
        assert not reserving.done()
        assert seed_channel.get_state() != grpc.ChannelConnectivity.SHUTDOWN
        release.set()
        jobs = await asyncio.wait_for(reserving, WAIT)
        assert jobs is not None and jobs[0].ctx.id == "held"
        assert seed_channel.get_state() == grpc.ChannelConnectivity.SHUTDOWN
        await client.ack(jobs[0])  # settled on the leader
    assert len(b.calls_to("Ack")) == 1
    switches = [r for r in caplog.records if "following the cluster leader" in r.msg]
    assert len(switches) == 1


async def test_the_leaders_channel_keeps_tls_and_the_api_key(tmp_path: Path) -> None:
    ca = make_tls_files(tmp_path)
    tls = ((tmp_path / "key.pem").read_bytes(), (tmp_path / "cert.pem").read_bytes())
    async with recording_server(tls) as a, recording_server(tls) as b:
        follower_of(a, b, "EnqueueBatch")
        b.answer("EnqueueBatch", ok("from-b"))
        async with await SeppClient.connect(
            f"https://{a.addr}", tls_ca_cert=ca, api_key="s3cret"
        ) as client:
            assert (await client.enqueue(EnqueueRequest("q", "t"))).job_id == "from-b"
        (sent,) = b.calls  # b speaks TLS only
        assert sent.metadata["authorization"] == "Bearer s3cret"
        assert sent.metadata["user-agent"].startswith("sepp-py/")


async def test_a_client_from_a_channel_surfaces_the_unavailable(
    a: RecordingServer, b: RecordingServer
) -> None:
    follower_of(a, b, "EnqueueBatch")
    b.answer("EnqueueBatch", ok("from-b"))
    async with SeppClient.from_channel(grpc.aio.insecure_channel(a.addr)) as client:
        with pytest.raises(TransportError) as failed:
            await client.enqueue(EnqueueRequest("q", "t"))
    assert failed.value.code == grpc.StatusCode.UNAVAILABLE
    assert "the leader is at" in str(failed.value)
    assert len(a.calls) == 1 and b.calls == []


async def test_the_sync_client_follows_the_leader(a: RecordingServer, b: RecordingServer) -> None:
    # The stub nodes run on this loop; the blocking client's calls wait in a thread.
    follower_of(a, b, "EnqueueBatch", "ListPauses")
    b.answer("EnqueueBatch", ok("from-b"))
    b.answer("ListPauses", pb.ListPausesResponse())
    client = await asyncio.to_thread(sepp_sync.SeppClient.connect, a.addr)
    try:
        ack = await asyncio.to_thread(client.enqueue, EnqueueRequest("q", "t"))
        assert ack.job_id == "from-b"
        assert await asyncio.to_thread(client.list_pauses) == []
    finally:
        await asyncio.to_thread(client.close)
    assert [c.method for c in a.calls] == ["EnqueueBatch"]
    assert [c.method for c in b.calls] == ["EnqueueBatch", "ListPauses"]


async def test_a_worker_follows_the_leader(a: RecordingServer, b: RecordingServer) -> None:
    follower_of(a, b, "Reserve", "Ack", "AckBatch")
    never = asyncio.Event()

    async def nothing_more(_: pb.ReserveRequest) -> pb.ReserveResponse:
        await never.wait()  # a long poll that ends with the worker's shutdown
        return pb.ReserveResponse()

    acked = asyncio.Event()

    def ack(_: pb.AckRequest) -> pb.AckResponse:
        acked.set()
        return pb.AckResponse()

    b.answer("Reserve", pb.ReserveResponse(jobs=[wire_job("w1")]), nothing_more)
    b.answer("Ack", ack)
    handled: list[str] = []
    async with await SeppClient.connect(a.addr) as client:
        worker = Worker(client, ["q"], timedelta(seconds=30))

        @worker.handler("t")
        async def handle(payload: Payload | None, ctx: JobCtx) -> None:
            handled.append(ctx.id)

        running = asyncio.ensure_future(worker.run())
        try:
            await asyncio.wait_for(acked.wait(), WAIT)
        finally:
            worker.shutdown_handle().shutdown()
            await asyncio.wait_for(running, WAIT)
    assert handled == ["w1"]
    # The worker asked the node it was given whether it has the Consume stream (this stub has
    # none, so it answers UNIMPLEMENTED), then reserved there.
    assert [c.method for c in a.calls if c.method != "GetServerInfo"] == ["Reserve"]
    assert b.calls_to("Ack")[0].request.job_id == "w1"


def test_the_leader_is_read_from_the_trailers_then_the_headers() -> None:
    def error(
        trailing: tuple[tuple[str, str | bytes], ...], initial: tuple[tuple[str, str], ...] = ()
    ) -> grpc.aio.AioRpcError:
        return grpc.aio.AioRpcError(
            grpc.StatusCode.UNAVAILABLE,
            grpc.aio.Metadata(*initial),
            grpc.aio.Metadata(*trailing),
            "not the leader",
        )

    assert leader_of(error((("sepp-leader", "10.0.0.2:50051"),))) == "10.0.0.2:50051"
    assert leader_of(error((("sepp-leader", b" h:1 "),))) == "h:1"
    assert leader_of(error((), (("sepp-leader", "h:2"),))) == "h:2"
    assert leader_of(error((("sepp-leader", "h:1"),), (("sepp-leader", "h:2"),))) == "h:1"
    assert leader_of(error(())) is None
    for bad in ("", "  ", "http://h:1", "h:1/x", "h 1:2"):
        assert leader_of(error((("sepp-leader", bad),))) is None


async def test_the_default_policy_rides_a_failover_until_a_leader_serves(
    a: RecordingServer, b: RecordingServer
) -> None:
    # The client met the cluster (a named b the leader); b then dies. a names the dead b twice
    # more, as during an election, then leads. With the default policy the call goes again,
    # back through a, until a serves it: the caller sees only the success.
    a.answer("ListPauses", *[not_leader(b.addr)] * 3, pb.ListPausesResponse())
    b.answer("ListPauses", pb.ListPausesResponse())
    async with await SeppClient.connect(a.addr) as client:
        await client.list_pauses()
        await b.stop()
        assert await asyncio.wait_for(client.list_pauses(), WAIT) == []
    assert len(a.calls) == 4


async def test_the_failover_window_ends_and_overload_is_no_failover(
    a: RecordingServer, b: RecordingServer
) -> None:
    follower_of(a, b, "ListPauses")
    b.answer("ListPauses", pb.ListPausesResponse())
    short = RetryPolicy(
        initial_backoff=timedelta(milliseconds=1), failover_window=timedelta(milliseconds=50)
    )
    async with await SeppClient.connect(a.addr, retry_policy=short) as client:
        await client.list_pauses()
        b.answer("ListPauses", grpc.StatusCode.RESOURCE_EXHAUSTED, pb.ListPausesResponse())
        with pytest.raises(OverloadedError):
            await client.list_pauses()
        assert len(b.calls) == 2, "an overloaded leader is not asked again"
        await b.stop()
        with pytest.raises(TransportError):
            await client.list_pauses()  # a names the dead b until the window has passed
        assert len(a.calls) > 2


async def test_a_client_given_the_leader_learns_the_members_and_reaches_another_when_it_dies(
    a: RecordingServer, b: RecordingServer
) -> None:
    # No node ever redirects this client: get_server_info tells it that a is a cluster's leader
    # and who the members are, so when a dies the next attempt asks b.
    info = pb.GetServerInfoResponse(server_version="0.2.0")
    info.server_time.GetCurrentTime()
    info.cluster.node_id = 1
    info.cluster.role = "leader"
    info.cluster.members.add(id=1, addr=a.addr, voter=True)
    info.cluster.members.add(id=2, addr=b.addr, voter=True)
    a.answer("GetServerInfo", info)
    a.answer("ListPauses", pb.ListPausesResponse())
    b.answer("ListPauses", pb.ListPausesResponse())
    async with await SeppClient.connect(a.addr) as client:
        cluster = (await client.get_server_info()).cluster
        assert cluster is not None and cluster.is_leader
        await client.list_pauses()
        await a.stop()
        assert await asyncio.wait_for(client.list_pauses(), WAIT) == []
    assert len(b.calls) == 1
