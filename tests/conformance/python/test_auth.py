"""API keys ([auth] api_keys, docs/protocol.md#authentication)."""

from __future__ import annotations

from datetime import timedelta

import grpc
import pytest
from sepp import EnqueueRequest, SeppClient, UnauthenticatedError

from harness import binary_version, running_server
from helpers import opts, reserve_one

KEY = "s3cret-Key_1"
OTHER_KEY = "another.key"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = {"auth": {"api_keys": [{"name": "ci", "key": KEY}, {"name": "ops", "key": OTHER_KEY}]}}
    with running_server(tmp_path_factory, config) as srv:
        yield srv


@pytest.fixture
async def client(server):
    async with await SeppClient.connect(server.addr, api_key=KEY) as c:
        yield c


async def test_calls_with_a_configured_api_key_succeed(client, new_queue):
    q = new_queue()
    info = await client.get_server_info()
    assert info.version == binary_version()
    ack = await client.enqueue(EnqueueRequest(q, "t"))
    job = await reserve_one(client, q)
    assert job.ctx.id == ack.job_id
    await client.extend(job.ctx, timedelta(seconds=5))
    await client.ack(job.ctx)
    assert await client.drain_dead_letters(queue=q) == []


async def test_every_configured_key_is_accepted(server, new_queue):
    async with await SeppClient.connect(server.addr, api_key=OTHER_KEY) as c:
        ack = await c.enqueue(EnqueueRequest(new_queue(), "t"))
        assert ack.deduplicated is False


async def test_calls_without_an_api_key_raise_unauthenticated(server, client, new_queue):
    q = new_queue()
    await client.enqueue(EnqueueRequest(q, "t"))
    async with await SeppClient.connect(server.addr) as anon:
        with pytest.raises(UnauthenticatedError):
            await anon.get_server_info()
        with pytest.raises(UnauthenticatedError):
            await anon.enqueue(EnqueueRequest(q, "t"))
        with pytest.raises(UnauthenticatedError):
            await anon.enqueue_atomic([EnqueueRequest(q, "t")])
        with pytest.raises(UnauthenticatedError):
            await anon.reserve(opts(q))
        with pytest.raises(UnauthenticatedError):
            await anon.drain_dead_letters(queue=q)
    # The rejected calls did not touch the queue: exactly one job is there.
    job = await reserve_one(client, q)
    assert await client.reserve(opts(q)) is None
    await client.ack(job.ctx)


@pytest.mark.parametrize("wrong_key", ["wrong", KEY + "x", KEY.upper(), "ci"])
async def test_calls_with_a_wrong_api_key_raise_unauthenticated(server, new_queue, wrong_key):
    async with await SeppClient.connect(server.addr, api_key=wrong_key) as c:
        with pytest.raises(UnauthenticatedError):
            await c.get_server_info()
        with pytest.raises(UnauthenticatedError):
            await c.enqueue(EnqueueRequest(new_queue(), "t"))


def _health_request(service: str) -> bytes:
    # grpc.health.v1.HealthCheckRequest { string service = 1; }
    raw = service.encode()
    return b"\x0a" + bytes([len(raw)]) + raw if raw else b""


async def test_health_service_does_not_require_an_api_key(server):
    async with grpc.aio.insecure_channel(server.addr) as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )
        for service in ("", "sepp.v1.QueueService"):
            # HealthCheckResponse { status = SERVING (1) }
            assert await check(_health_request(service), timeout=5) == b"\x08\x01"


async def test_an_empty_api_key_list_rejects_every_call(start_server):
    srv = start_server({"auth": {"api_keys": []}})
    for key in (None, KEY):
        async with await SeppClient.connect(srv.addr, api_key=key) as c:
            with pytest.raises(UnauthenticatedError):
                await c.get_server_info()
            with pytest.raises(UnauthenticatedError):
                await c.enqueue(EnqueueRequest("q", "t"))
