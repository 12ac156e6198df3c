"""GetServerInfo: defaults (docs/protocol.md#getserverinfo) and values taken from the config."""

from __future__ import annotations

from datetime import timedelta

from sepp import EncodingNotAllowed, EnqueueAck, EnqueueRequest, Payload, SeppClient

from harness import binary_version
from helpers import utcnow


async def test_server_info_reports_the_defaults_of_an_unconfigured_server(client):
    before = utcnow()
    info = await client.get_server_info()
    after = utcnow()
    assert info.version == binary_version()
    assert info.supported_protocol_versions == ["v1"]
    slack = timedelta(milliseconds=50)
    assert before - slack <= info.server_time <= after + slack
    assert info.restricts_encodings is False
    assert info.allowed_encodings == []
    assert info.max_payload_bytes == 1_048_576
    assert info.max_custom_entries == 64
    assert info.max_custom_total_bytes == 16_384
    assert info.max_custom_key_bytes == 256
    assert info.max_queue_name_bytes == 512
    assert info.max_job_type_bytes == 256
    assert info.max_idempotency_key_bytes == 256
    assert info.max_schedule_horizon == timedelta(seconds=2_592_000)
    assert info.max_enqueue_batch == 256
    assert info.max_reserve_batch == 256
    assert info.max_reserve_queues == 32
    assert info.max_wait_timeout == timedelta(seconds=300)
    assert info.max_lease_duration == timedelta(seconds=300)
    assert info.strict_queues is False
    assert info.dead_letter_retention_enabled is False


async def test_server_info_reflects_the_configured_limits(start_server):
    srv = start_server(
        {
            "server": {"strict_queues": True},
            "storage": {"dead_letter_retention_ms": 60_000},
            "limits": {
                "allowed_encodings": ["application/json", "text/plain"],
                "max_payload_bytes": 4096,
                "max_custom_entries": 8,
                "max_custom_total_bytes": 1000,
                "max_custom_key_bytes": 32,
                "max_queue_name_bytes": 100,
                "max_job_type_bytes": 50,
                "max_idempotency_key_bytes": 40,
                "max_schedule_horizon_ms": 3_600_000,
                "max_enqueue_batch": 10,
                "max_reserve_batch": 20,
                "max_reserve_queues": 4,
                "max_wait_timeout_ms": 15_000,
                "max_lease_duration_ms": 90_500,
            },
            # Per-queue overrides are not reflected in server info.
            "queues": [{"name": "big", "max_payload_bytes": 8192}],
        }
    )
    async with await SeppClient.connect(srv.addr) as c:
        info = await c.get_server_info()
    assert info.version == binary_version()
    assert info.restricts_encodings is True
    assert info.allowed_encodings == ["application/json", "text/plain"]
    assert info.max_payload_bytes == 4096
    assert info.max_custom_entries == 8
    assert info.max_custom_total_bytes == 1000
    assert info.max_custom_key_bytes == 32
    assert info.max_queue_name_bytes == 100
    assert info.max_job_type_bytes == 50
    assert info.max_idempotency_key_bytes == 40
    assert info.max_schedule_horizon == timedelta(hours=1)
    assert info.max_enqueue_batch == 10
    assert info.max_reserve_batch == 20
    assert info.max_reserve_queues == 4
    assert info.max_wait_timeout == timedelta(seconds=15)
    assert info.max_lease_duration == timedelta(milliseconds=90_500)
    assert info.strict_queues is True
    assert info.dead_letter_retention_enabled is True


async def test_empty_allowed_encodings_list_restricts_every_payload(start_server):
    srv = start_server({"limits": {"allowed_encodings": []}})
    async with await SeppClient.connect(srv.addr) as c:
        info = await c.get_server_info()
        assert info.restricts_encodings is True
        assert info.allowed_encodings == []
        results = await c.enqueue_batch(
            [
                EnqueueRequest("q", "t", payload=Payload(b"x", "text/plain")),
                EnqueueRequest("q", "t"),
            ]
        )
    assert results[0] == EncodingNotAllowed(encoding="text/plain", allowed=[])
    assert isinstance(results[1], EnqueueAck)
