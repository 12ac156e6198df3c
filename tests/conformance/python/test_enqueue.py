"""Enqueue: round trips, the validation pipeline (docs/protocol.md#job-validation), batch/atomic and dedup."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta

import pytest
from sepp import (
    BatchValidationError,
    CustomEntriesTooMany,
    CustomKeyTooLong,
    CustomMapTooLarge,
    EncodingNotAllowed,
    EnqueueAck,
    EnqueueRequest,
    IdempotencyKeyTooLong,
    InvalidRequest,
    InvalidRequestError,
    JobRejectedError,
    JobTypeNameTooLong,
    JobTypeNotAllowed,
    JobValidationError,
    Payload,
    PayloadTooLarge,
    QueueFull,
    QueueNameTooLong,
    ScheduledTooFar,
    SeppClient,
    TraceContext,
    UnknownQueue,
)

from harness import running_server
from helpers import WAIT, assert_empty, next_millisecond, opts, reserve_all, reserve_one, utcnow

UUID_V4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

TYPED = "typed"
JSON_ONLY = "json-only"
SMALL = "small"
CAPPED = "capped"
CAPPED_ATOMIC = "capped-atomic"
PRIO5 = "prio5"
TINY_CUSTOM = "tiny-custom"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = {
        "queues": [
            {"name": TYPED, "allowed_job_types": ["email", "sms"]},
            {"name": JSON_ONLY, "allowed_encodings": ["application/json"]},
            {
                "name": SMALL,
                "max_payload_bytes": 16,
                "max_custom_entries": 2,
                "max_custom_key_bytes": 8,
                "max_custom_total_bytes": 40,
                "max_schedule_horizon_ms": 60_000,
            },
            {"name": CAPPED, "max_queue_depth": 2},
            {"name": CAPPED_ATOMIC, "max_queue_depth": 2},
            {"name": PRIO5, "default_priority": 5, "default_max_attempts": 7},
            {"name": TINY_CUSTOM, "max_custom_total_bytes": 10},
        ]
    }
    with running_server(tmp_path_factory, config) as srv:
        yield srv


# --------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------


async def test_enqueue_then_reserve_returns_the_job_with_attempt_1(client, new_queue):
    q = new_queue()
    tc = TraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=abc")
    payload = Payload(b'{"user": 42}', "application/json")
    before = utcnow()
    ack = await client.enqueue(
        EnqueueRequest(
            q,
            "send_welcome",
            payload=payload,
            priority=7,
            max_attempts=5,
            custom={"s": "text", "i": 42, "f": 1.5, "b": True},
            trace_context=tc,
        )
    )
    after = utcnow()
    assert UUID_V4.match(ack.job_id), ack.job_id
    assert ack.deduplicated is False

    job = await reserve_one(client, q, lease=timedelta(seconds=30))
    ctx = job.ctx
    assert ctx.id == ack.job_id
    assert ctx.queue == q
    assert ctx.job_type == "send_welcome"
    assert job.payload == payload
    assert int(ctx.priority) == 7
    assert ctx.attempt == 1
    assert ctx.max_attempts == 5
    assert ctx.custom == {"s": "text", "i": 42, "f": 1.5, "b": True}
    assert isinstance(ctx.custom["i"], int) and not isinstance(ctx.custom["i"], bool)
    assert isinstance(ctx.custom["f"], float)
    assert ctx.custom["b"] is True
    assert ctx.trace_context == tc
    assert ctx.scheduled_at is None
    slack = timedelta(milliseconds=50)
    assert before - slack <= ctx.enqueued_at <= after + slack
    expected_expiry = utcnow() + timedelta(seconds=30)
    assert abs(ctx.lease_expires_at - expected_expiry) < timedelta(seconds=2)


async def test_job_without_payload_gets_queue_defaults(client, new_queue):
    q = new_queue()
    await client.enqueue(EnqueueRequest(q, "bare"))
    job = await reserve_one(client, q)
    assert job.payload is None
    assert int(job.ctx.priority) == 0
    assert job.ctx.max_attempts == 3
    assert job.ctx.custom == {}
    assert job.ctx.trace_context is None


async def test_declared_queue_overrides_default_priority_and_max_attempts(client):
    await client.enqueue(EnqueueRequest(PRIO5, "t"))
    job = await reserve_one(client, PRIO5)
    assert int(job.ctx.priority) == 5
    assert job.ctx.max_attempts == 7
    await client.ack(job.ctx)


async def test_max_attempts_above_the_ceiling_is_clamped_to_100(client, new_queue):
    q = new_queue()
    await client.enqueue(EnqueueRequest(q, "t", max_attempts=500))
    job = await reserve_one(client, q)
    assert job.ctx.max_attempts == 100


# --------------------------------------------------------------------------
# Validation pipeline, stage A (structural): exact InvalidRequest messages
# --------------------------------------------------------------------------

STAGE_A_CASES = [
    (dict(queue="."), 'queue must not be "." or ".."'),
    (dict(queue=".."), 'queue must not be "." or ".."'),
    (dict(queue="a/b"), "queue must not contain '/'"),
    (dict(queue="a\x07b"), "queue must not contain control characters"),
    (dict(payload=Payload(b"", "text/plain")), "payload.data must not be empty"),
    (dict(payload=Payload(b"x", "")), "payload.encoding must not be empty"),
    (dict(idempotency_key=""), "idempotency_key must not be empty"),
    (dict(max_attempts=0), "max_attempts must be >= 1"),
    (dict(custom={"": 1}), "custom key must not be empty"),
]


@pytest.mark.parametrize("fields,message", STAGE_A_CASES, ids=[m for _, m in STAGE_A_CASES])
async def test_structurally_invalid_job_is_rejected_with_the_exact_message(
    client, new_queue, fields, message
):
    args = {"queue": new_queue(), "job_type": "t", **fields}
    queue = args.pop("queue")
    job_type = args.pop("job_type")
    [result] = await client.enqueue_batch([EnqueueRequest(queue, job_type, **args)])
    assert result == InvalidRequest(detail=message)


async def test_single_enqueue_raises_job_rejected_error_with_the_rejection(client, new_queue):
    with pytest.raises(JobRejectedError) as info:
        await client.enqueue(EnqueueRequest(new_queue(), "t", max_attempts=0))
    assert info.value.rejection == InvalidRequest(detail="max_attempts must be >= 1")


async def test_structural_check_wins_over_limit_checks(client):
    # Job type not allowed (stage C) *and* empty payload data (stage A).
    [result] = await client.enqueue_batch(
        [EnqueueRequest(TYPED, "push", payload=Payload(b"", "raw"))]
    )
    assert result == InvalidRequest(detail="payload.data must not be empty")


# --------------------------------------------------------------------------
# Stage C (limits) and the batch contract
# --------------------------------------------------------------------------


async def test_batch_returns_one_result_per_job_in_order_with_rejections_in_place(
    client, new_queue
):
    q = new_queue()
    results = await client.enqueue_batch(
        [
            EnqueueRequest(q, "ok-1"),
            EnqueueRequest(SMALL, "t", payload=Payload(b"x" * 17, "raw")),
            EnqueueRequest(q, "t", max_attempts=0),
            EnqueueRequest(TYPED, "push"),
            EnqueueRequest(JSON_ONLY, "t", payload=Payload(b"hi", "text/plain")),
            EnqueueRequest(q, "ok-2"),
        ]
    )
    assert len(results) == 6
    assert isinstance(results[0], EnqueueAck) and not results[0].deduplicated
    assert results[1] == PayloadTooLarge(limit=16, actual=17)
    assert results[2] == InvalidRequest(detail="max_attempts must be >= 1")
    assert results[3] == JobTypeNotAllowed(job_type="push", allowed=["email", "sms"])
    assert results[4] == EncodingNotAllowed(encoding="text/plain", allowed=["application/json"])
    assert isinstance(results[5], EnqueueAck)
    # Only the two valid jobs were written.
    jobs = await reserve_all(client, q, 10)
    assert sorted(j.ctx.id for j in jobs) == sorted([results[0].job_id, results[5].job_id])


async def test_allowed_job_types_and_encodings_accept_matching_jobs(client):
    results = await client.enqueue_batch(
        [
            EnqueueRequest(TYPED, "email"),
            EnqueueRequest(JSON_ONLY, "t", payload=Payload(b"{}", "application/json")),
            # A job without payload is not subject to allowed_encodings.
            EnqueueRequest(JSON_ONLY, "t"),
        ]
    )
    assert all(isinstance(r, EnqueueAck) for r in results), results
    for q, n in ((TYPED, 1), (JSON_ONLY, 2)):
        for job in await reserve_all(client, q, n):
            await client.ack(job.ctx)


async def test_payload_at_the_limit_is_accepted_and_one_byte_more_is_rejected(client):
    results = await client.enqueue_batch(
        [
            EnqueueRequest(SMALL, "t", payload=Payload(b"x" * 16, "raw")),
            EnqueueRequest(SMALL, "t", payload=Payload(b"x" * 17, "raw")),
        ]
    )
    assert isinstance(results[0], EnqueueAck)
    assert results[1] == PayloadTooLarge(limit=16, actual=17)
    job = await reserve_one(client, SMALL)
    assert job.ctx.id == results[0].job_id
    await client.ack(job.ctx)


async def test_name_and_key_lengths_are_checked_against_server_limits(client, new_queue):
    long_queue = "q" * 513
    results = await client.enqueue_batch(
        [
            EnqueueRequest(long_queue, "t"),
            EnqueueRequest(new_queue(), "j" * 257),
            EnqueueRequest(new_queue(), "t", idempotency_key="k" * 257),
            # Exactly at the limits is fine.
            EnqueueRequest(new_queue(), "j" * 256, idempotency_key="k" * 256),
        ]
    )
    assert results[0] == QueueNameTooLong(limit=512, actual=513)
    assert results[1] == JobTypeNameTooLong(limit=256, actual=257)
    assert results[2] == IdempotencyKeyTooLong(limit=256, actual=257)
    assert isinstance(results[3], EnqueueAck)


async def test_custom_map_limits_report_limit_and_actual(client):
    results = await client.enqueue_batch(
        [
            EnqueueRequest(SMALL, "t", custom={"a": 1, "b": 2, "c": 3}),
            EnqueueRequest(SMALL, "t", custom={"averylongkey": 1}),
            # total = len("a") + len("x" * 40) = 41 > 40
            EnqueueRequest(SMALL, "t", custom={"a": "x" * 40}),
        ]
    )
    assert results[0] == CustomEntriesTooMany(limit=2, actual=3)
    assert results[1] == CustomKeyTooLong(key="averylongkey", limit=8, actual=12)
    assert results[2] == CustomMapTooLarge(limit=40, actual=41)


async def test_custom_total_counts_8_bytes_per_number_and_1_per_bool(client):
    results = await client.enqueue_batch(
        [
            # (1 + 8) + (1 + 8) = 18 <= 40
            EnqueueRequest(SMALL, "t", custom={"i": 7, "f": 0.5}),
            # (1 + 1) + (1 + 37) = 40 <= 40
            EnqueueRequest(SMALL, "t", custom={"b": True, "s": "y" * 37}),
            # (1 + 1) + (1 + 38) = 41 > 40
            EnqueueRequest(SMALL, "t", custom={"b": True, "s": "y" * 38}),
            # (1 + 8) + (1 + 8) + (1 + 1) + (1 + 3) = 24 > 10
            EnqueueRequest(TINY_CUSTOM, "t", custom={"i": -1, "f": 2.5, "b": False, "s": "abc"}),
        ]
    )
    assert isinstance(results[0], EnqueueAck)
    assert isinstance(results[1], EnqueueAck)
    assert results[2] == CustomMapTooLarge(limit=40, actual=41)
    assert results[3] == CustomMapTooLarge(limit=10, actual=24)
    for job in await reserve_all(client, SMALL, 2):
        await client.ack(job.ctx)


async def test_scheduled_beyond_the_queue_horizon_is_rejected_with_horizon_and_time(client):
    when = utcnow() + timedelta(minutes=2)
    [result] = await client.enqueue_batch([EnqueueRequest(SMALL, "t", scheduled_at=when)])
    assert isinstance(result, ScheduledTooFar), result
    assert result.horizon == timedelta(seconds=60)
    assert abs(result.actual - when) < timedelta(milliseconds=1)


async def test_queue_full_rejects_jobs_beyond_max_queue_depth(client):
    results = await client.enqueue_batch([EnqueueRequest(CAPPED, "t") for _ in range(3)])
    assert isinstance(results[0], EnqueueAck)
    assert isinstance(results[1], EnqueueAck)
    assert results[2] == QueueFull(queue=CAPPED, limit=2)
    # In-flight jobs still count towards the depth ...
    job = await reserve_one(client, CAPPED)
    [again] = await client.enqueue_batch([EnqueueRequest(CAPPED, "t")])
    assert again == QueueFull(queue=CAPPED, limit=2)
    # ... acked ones do not.
    await client.ack(job.ctx)
    [after_ack] = await client.enqueue_batch([EnqueueRequest(CAPPED, "t")])
    assert isinstance(after_ack, EnqueueAck)


async def test_strict_mode_rejects_undeclared_queue_per_job(start_server):
    srv = start_server({"server": {"strict_queues": True}, "queues": [{"name": "declared"}]})
    async with await SeppClient.connect(srv.addr) as c:
        long_type = "j" * 300
        results = await c.enqueue_batch(
            [
                EnqueueRequest("declared", "t"),
                EnqueueRequest("undeclared", "t"),
                # Strict check (stage B) comes before limits (stage C) ...
                EnqueueRequest("undeclared", long_type),
                # ... but after structural checks (stage A).
                EnqueueRequest("undeclared", "t", max_attempts=0),
            ]
        )
        assert isinstance(results[0], EnqueueAck)
        assert results[1] == UnknownQueue(queue="undeclared")
        assert results[2] == UnknownQueue(queue="undeclared")
        assert results[3] == InvalidRequest(detail="max_attempts must be >= 1")


async def test_batch_larger_than_max_enqueue_batch_is_an_invalid_request(client, new_queue):
    q = new_queue()
    too_many = [EnqueueRequest(q, "t") for _ in range(257)]
    with pytest.raises(InvalidRequestError) as info:
        await client.enqueue_batch(too_many)
    assert "batch exceeds max_enqueue_batch (256)" in str(info.value)
    with pytest.raises(InvalidRequestError):
        await client.enqueue_atomic(too_many)
    await assert_empty(client, q)
    assert len(await client.enqueue_batch(too_many[:256])) == 256


# --------------------------------------------------------------------------
# Atomic enqueue
# --------------------------------------------------------------------------


async def test_atomic_enqueue_returns_acks_in_order_and_writes_every_job(client, new_queue):
    q = new_queue()
    acks = await client.enqueue_atomic([EnqueueRequest(q, f"t{i}") for i in range(4)])
    assert len(acks) == 4
    assert len({a.job_id for a in acks}) == 4
    jobs = await reserve_all(client, q, 10)
    by_id = {j.ctx.id: j.ctx.job_type for j in jobs}
    assert by_id == {a.job_id: f"t{i}" for i, a in enumerate(acks)}


async def test_atomic_enqueue_is_all_or_nothing_listing_every_failing_index(client, new_queue):
    q = new_queue()
    with pytest.raises(BatchValidationError) as info:
        await client.enqueue_atomic(
            [
                EnqueueRequest(q, "ok"),
                EnqueueRequest(q, "t", max_attempts=0),
                EnqueueRequest(q, "ok"),
                EnqueueRequest(TYPED, "push"),
            ]
        )
    assert info.value.errors == [
        JobValidationError(1, InvalidRequest(detail="max_attempts must be >= 1")),
        JobValidationError(3, JobTypeNotAllowed(job_type="push", allowed=["email", "sms"])),
    ]
    await assert_empty(client, q)


async def test_atomic_enqueue_over_a_depth_cap_lists_every_job_for_that_queue(client, new_queue):
    other = new_queue()
    with pytest.raises(BatchValidationError) as info:
        await client.enqueue_atomic(
            [
                EnqueueRequest(CAPPED_ATOMIC, "t"),
                EnqueueRequest(other, "t"),
                EnqueueRequest(CAPPED_ATOMIC, "t"),
                EnqueueRequest(CAPPED_ATOMIC, "t"),
            ]
        )
    full = QueueFull(queue=CAPPED_ATOMIC, limit=2)
    assert info.value.errors == [
        JobValidationError(0, full),
        JobValidationError(2, full),
        JobValidationError(3, full),
    ]
    # Nothing was committed, not even the job for the uncapped queue.
    await assert_empty(client, [other, CAPPED_ATOMIC])
    # Two jobs fit.
    acks = await client.enqueue_atomic([EnqueueRequest(CAPPED_ATOMIC, "t")] * 2)
    assert len(acks) == 2


# --------------------------------------------------------------------------
# Idempotency keys
# --------------------------------------------------------------------------


async def test_idempotency_key_returns_the_original_id_with_deduplicated_set(client, new_queue):
    q = new_queue()
    first = await client.enqueue(EnqueueRequest(q, "t", idempotency_key="order-1"))
    second = await client.enqueue(EnqueueRequest(q, "other-type", idempotency_key="order-1"))
    assert first.deduplicated is False
    assert second == EnqueueAck(job_id=first.job_id, deduplicated=True)
    jobs = await reserve_all(client, q, 10)
    assert [j.ctx.id for j in jobs] == [first.job_id]
    assert jobs[0].ctx.job_type == "t"


async def test_duplicate_keys_within_one_batch_are_deduplicated_against_each_other(
    client, new_queue
):
    q = new_queue()
    results = await client.enqueue_batch(
        [
            EnqueueRequest(q, "t", idempotency_key="k"),
            EnqueueRequest(q, "t", idempotency_key="k"),
            EnqueueRequest(q, "t", idempotency_key="other"),
        ]
    )
    assert results[0].deduplicated is False
    assert results[1] == EnqueueAck(job_id=results[0].job_id, deduplicated=True)
    assert results[2].deduplicated is False and results[2].job_id != results[0].job_id
    atomic = await client.enqueue_atomic(
        [EnqueueRequest(q, "t", idempotency_key="a"), EnqueueRequest(q, "t", idempotency_key="a")]
    )
    assert atomic[1] == EnqueueAck(job_id=atomic[0].job_id, deduplicated=True)
    assert len(await reserve_all(client, q, 10)) == 3


async def test_idempotency_is_scoped_per_queue_and_outlives_the_job(client, new_queue):
    q1, q2 = new_queue("a"), new_queue("b")
    a = await client.enqueue(EnqueueRequest(q1, "t", idempotency_key="same"))
    b = await client.enqueue(EnqueueRequest(q2, "t", idempotency_key="same"))
    assert not a.deduplicated and not b.deduplicated and a.job_id != b.job_id
    job = await reserve_one(client, q1)
    await client.ack(job.ctx)
    again = await client.enqueue(EnqueueRequest(q1, "t", idempotency_key="same"))
    assert again == EnqueueAck(job_id=a.job_id, deduplicated=True)
    await assert_empty(client, q1)


# --------------------------------------------------------------------------
# Ordering
# --------------------------------------------------------------------------


async def test_higher_priority_is_reserved_first(client, new_queue):
    q = new_queue()
    ids = {}
    for p in (0, 9, 3, 5):
        ids[p] = (await client.enqueue(EnqueueRequest(q, "t", priority=p))).job_id
    order = [(await reserve_one(client, q)).ctx for _ in range(4)]
    assert [int(c.priority) for c in order] == [9, 5, 3, 0]
    assert [c.id for c in order] == [ids[9], ids[5], ids[3], ids[0]]


async def test_jobs_of_one_priority_enqueued_apart_come_out_fifo(client, new_queue):
    q = new_queue()
    ids = []
    for _ in range(5):
        ids.append((await client.enqueue(EnqueueRequest(q, "t", priority=4))).job_id)
        await next_millisecond()  # FIFO is by enqueue millisecond in 0.1
    jobs = await reserve_all(client, q, 5)
    assert [j.ctx.id for j in jobs] == ids


@pytest.mark.improvement
async def test_jobs_of_one_batch_come_out_in_submission_order(client, new_queue):
    q = new_queue()
    results = await client.enqueue_batch([EnqueueRequest(q, f"t{i}") for i in range(20)])
    jobs = await reserve_all(client, q, 20)
    assert [j.ctx.id for j in jobs] == [r.job_id for r in results]


# --------------------------------------------------------------------------
# Scheduling
# --------------------------------------------------------------------------


async def test_scheduled_job_is_not_delivered_before_it_is_due(client, new_queue):
    q = new_queue()
    due = utcnow() + timedelta(milliseconds=500)
    ack = await client.enqueue(EnqueueRequest(q, "later", scheduled_at=due))
    assert await client.reserve(opts(q)) is None
    job = await reserve_one(client, q, wait=WAIT)
    assert utcnow() >= due - timedelta(milliseconds=5)
    assert job.ctx.id == ack.job_id
    assert job.ctx.attempt == 1
    assert abs(job.ctx.scheduled_at - due) < timedelta(milliseconds=1)


async def test_job_scheduled_in_the_past_is_ready_at_once_and_keeps_scheduled_at(client, new_queue):
    q = new_queue()
    when = utcnow() - timedelta(minutes=5)
    await client.enqueue(EnqueueRequest(q, "t", scheduled_at=when))
    [job] = await reserve_all(client, q, 1)
    assert abs(job.ctx.scheduled_at - when) < timedelta(milliseconds=1)
