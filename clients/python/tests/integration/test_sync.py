"""The blocking facade `sepp.sync.SeppClient` against the real server."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from sepp import (
    BatchValidationError,
    ConnectError,
    EnqueueAck,
    EnqueueRequest,
    JobRejectedError,
    Payload,
    PayloadTooLarge,
)
from sepp.sync import SeppClient
from tests.sepp_server import SeppServer


def test_producer_calls_block_and_answer(server: SeppServer, queue: str) -> None:
    with SeppClient.connect(server.addr) as client:
        ack = client.enqueue(EnqueueRequest(queue, "t", payload=Payload(b"x", "text/plain")))
        assert isinstance(ack, EnqueueAck)
        results = client.enqueue_batch(EnqueueRequest(queue, "t") for _ in range(3))
        assert len(results) == 3 and all(isinstance(r, EnqueueAck) for r in results)
        assert len(client.enqueue_atomic([EnqueueRequest(queue, "t")])) == 1
        assert client.get_server_info().version
    with pytest.raises(RuntimeError, match="closed"):
        client.get_server_info()
    client.close()  # twice is fine


def test_errors_are_the_async_clients(start_server, queue: str) -> None:
    srv = start_server({"queues": [{"name": queue, "max_payload_bytes": 1}]})
    with SeppClient.connect(srv.addr) as client:
        with pytest.raises(JobRejectedError) as rejected:
            client.enqueue(EnqueueRequest(queue, "t", payload=Payload(b"xy", "x")))
        assert rejected.value.rejection == PayloadTooLarge(1, 2)
        with pytest.raises(BatchValidationError):
            client.enqueue_atomic([EnqueueRequest(queue, "t", payload=Payload(b"xy", "x"))])
    with pytest.raises(ConnectError):
        SeppClient.connect("127.0.0.1:1", connect_timeout=timedelta(milliseconds=200))


def test_threads_share_one_client(server: SeppServer, queue: str) -> None:
    with SeppClient.connect(server.addr) as client:
        with ThreadPoolExecutor(8) as pool:
            acks = list(
                pool.map(
                    lambda i: client.enqueue(EnqueueRequest(queue, "t", custom={"i": i})), range(64)
                )
            )
        assert len({a.job_id for a in acks}) == 64
    assert not any(t.name == "sepp-sync-client" for t in threading.enumerate())
