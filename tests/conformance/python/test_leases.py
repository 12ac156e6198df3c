"""Reserve long-polling, leases (ack / nack / extend / expiry) and dead letters."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sepp import (
    AttemptMismatchError,
    DeadLetterCause,
    EnqueueRequest,
    InvalidRequestError,
    JobNotFoundError,
    Payload,
    RetryDirective,
    SeppClient,
    UnknownQueuesError,
)

from harness import WATCH_PARKED, running_server
from helpers import (
    WAIT,
    assert_empty,
    drain_until,
    next_millisecond,
    opts,
    reserve_all,
    reserve_one,
    utcnow,
)

SHORT_LEASE_QUEUE = "short-lease"
RETRY_POLICY_QUEUE = "retry-600ms"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = {
        **WATCH_PARKED,
        "storage": {"dead_letter_retention_ms": 3_600_000},
        "queues": [
            {"name": SHORT_LEASE_QUEUE, "max_lease_duration_ms": 1000},
            {"name": RETRY_POLICY_QUEUE, "retry_delay_ms": 600},
        ],
    }
    with running_server(tmp_path_factory, config) as srv:
        yield srv


# --------------------------------------------------------------------------
# Reserve
# --------------------------------------------------------------------------


async def test_reserve_long_poll_wakes_when_another_client_enqueues(server, client, new_queue):
    q = new_queue()
    waiter = asyncio.create_task(client.reserve(opts(q, wait=timedelta(seconds=60))))
    # The enqueue below comes after the server parked the long poll: the wake-up path.
    await server.wait_parked(1)
    assert not waiter.done(), "reserve on an empty queue returned before its wait elapsed"
    async with await SeppClient.connect(server.addr) as producer:
        ack = await producer.enqueue(EnqueueRequest(q, "wake"))
    # Woken: its own wait (60 s) outlasts this one.
    jobs = await asyncio.wait_for(waiter, timeout=10)
    assert jobs is not None and [j.ctx.id for j in jobs] == [ack.job_id]


async def test_reserve_wait_elapses_empty(client, new_queue):
    # Ends empty, not in an error. (When: the server's own tests move its clock to the deadline.)
    jobs = await client.reserve(opts(new_queue(), wait=timedelta(milliseconds=300)))
    assert jobs is None


async def test_reserve_takes_max_jobs_from_queues_in_listed_order(client, new_queue):
    a, b = new_queue("a"), new_queue("b")
    a_ids = [r.job_id for r in await client.enqueue_batch([EnqueueRequest(a, "t")] * 2)]
    b_ids = [r.job_id for r in await client.enqueue_batch([EnqueueRequest(b, "t")] * 2)]
    jobs = await reserve_all(client, [b, a], 3)
    assert [j.ctx.queue for j in jobs] == [b, b, a]
    assert {j.ctx.id for j in jobs[:2]} == set(b_ids)
    assert jobs[2].ctx.id in a_ids


async def test_reserve_clamps_the_lease_to_the_queue_max_lease(client):
    await client.enqueue(EnqueueRequest(SHORT_LEASE_QUEUE, "t"))
    job = await reserve_one(client, SHORT_LEASE_QUEUE, lease=timedelta(minutes=2))
    remaining = job.ctx.lease_expires_at - utcnow()
    assert remaining <= timedelta(seconds=1) + timedelta(milliseconds=50), remaining
    await client.ack(job.ctx)


# --------------------------------------------------------------------------
# Ack
# --------------------------------------------------------------------------


async def test_ack_then_ack_again_raises_job_not_found(client, new_queue):
    q = new_queue()
    await client.enqueue(EnqueueRequest(q, "t"))
    job = await reserve_one(client, q)
    await client.ack(job.ctx)
    with pytest.raises(JobNotFoundError):
        await client.ack(job.ctx)
    await assert_empty(client, q)


async def test_ack_with_a_stale_attempt_raises_attempt_mismatch(client, new_queue):
    q = new_queue()
    await client.enqueue(EnqueueRequest(q, "t"))
    first = await reserve_one(client, q)
    assert await client.nack(first.ctx) is False
    second = await reserve_one(client, q)
    assert second.ctx.id == first.ctx.id and second.ctx.attempt == 2
    with pytest.raises(AttemptMismatchError):
        await client.ack(first.ctx)
    with pytest.raises(AttemptMismatchError):
        await client.nack(first.ctx)
    with pytest.raises(AttemptMismatchError):
        await client.extend(first.ctx, timedelta(seconds=10))
    # The stale calls changed nothing; the current holder can still ack.
    await client.ack(second.ctx)


# --------------------------------------------------------------------------
# Nack
# --------------------------------------------------------------------------


async def test_nack_default_redelivers_at_once_with_attempt_2(client, new_queue):
    q = new_queue()
    payload = Payload(b"\x00\x01binary", "application/octet-stream")
    ack = await client.enqueue(EnqueueRequest(q, "t", payload=payload, custom={"k": "v"}))
    first = await reserve_one(client, q)
    assert await client.nack(first.ctx, RetryDirective.DEFAULT, "transient") is False
    [again] = await reserve_all(client, q, 1)  # immediately ready: retry_delay_ms = 0
    assert again.ctx.id == ack.job_id
    assert again.ctx.attempt == 2
    assert again.payload == payload
    assert again.ctx.custom == {"k": "v"}
    assert again.ctx.enqueued_at == first.ctx.enqueued_at


async def test_nack_default_follows_the_queue_retry_delay(client):
    await client.enqueue(EnqueueRequest(RETRY_POLICY_QUEUE, "t"))
    first = await reserve_one(client, RETRY_POLICY_QUEUE)
    assert await client.nack(first.ctx) is False
    # retry_delay_ms = 600 (less up to 25 % jitter): not back at once, then back. (The server's
    # own tests hold the delay to the millisecond on a clock they move.)
    assert await client.reserve(opts(RETRY_POLICY_QUEUE)) is None
    again = await reserve_one(client, RETRY_POLICY_QUEUE, wait=WAIT)
    assert again.ctx.attempt == 2
    await client.ack(again.ctx)


async def test_nack_with_a_delay_is_not_redelivered_before_the_delay(client, new_queue):
    q = new_queue()
    await client.enqueue(EnqueueRequest(q, "t"))
    first = await reserve_one(client, q)
    dead = await client.nack(first.ctx, RetryDirective.after(timedelta(milliseconds=500)), "later")
    assert dead is False
    assert await client.reserve(opts(q)) is None
    again = await reserve_one(client, q, wait=WAIT)
    assert again.ctx.id == first.ctx.id and again.ctx.attempt == 2


async def test_nack_dead_letter_keeps_a_record_with_cause_rejected(client, new_queue):
    q = new_queue()
    payload = Payload(b'{"n": 1}', "application/json")
    ack = await client.enqueue(
        EnqueueRequest(q, "t", payload=payload, priority=6, max_attempts=4, custom={"c": 3})
    )
    job = await reserve_one(client, q)
    before = utcnow()
    assert await client.nack(job.ctx, RetryDirective.DEAD_LETTER, "poison message") is True
    await assert_empty(client, q)
    with pytest.raises(JobNotFoundError):
        await client.ack(job.ctx)

    [record] = await client.drain_dead_letters(queue=q, max_records=10)
    assert record.job_id == ack.job_id
    assert record.queue == q
    assert record.job_type == "t"
    assert record.payload == payload
    assert int(record.priority) == 6
    assert record.max_attempts == 4
    assert record.custom == {"c": 3}
    assert record.cause == DeadLetterCause.REJECTED
    assert record.final_attempt == 1
    assert record.last_reason == "poison message"
    assert record.enqueued_at == job.ctx.enqueued_at
    assert before - timedelta(milliseconds=50) <= record.failed_at <= utcnow()
    # Draining removes the record.
    assert await client.drain_dead_letters(queue=q, max_records=10) == []


async def test_nack_on_the_last_attempt_dead_letters_with_attempts_exhausted(client, new_queue):
    q = new_queue()
    await client.enqueue(EnqueueRequest(q, "t", max_attempts=2))
    first = await reserve_one(client, q)
    assert await client.nack(first.ctx, reason="one") is False
    second = await reserve_one(client, q)
    assert second.ctx.attempt == 2
    # Exhaustion wins even over an explicit delay.
    dead = await client.nack(second.ctx, RetryDirective.after(timedelta(seconds=5)), "two")
    assert dead is True
    await assert_empty(client, q)
    [record] = await client.drain_dead_letters(queue=q, max_records=10)
    assert record.cause == DeadLetterCause.ATTEMPTS_EXHAUSTED
    assert record.final_attempt == 2
    assert record.last_reason == "two"


# --------------------------------------------------------------------------
# Lease expiry and extend
# --------------------------------------------------------------------------


async def test_lease_expiry_redelivers_the_job_with_the_next_attempt(client, new_queue):
    q = new_queue()
    ack = await client.enqueue(EnqueueRequest(q, "t"))
    first = await reserve_one(client, q, lease=timedelta(milliseconds=200))
    again = await reserve_one(client, q, wait=WAIT)
    assert utcnow() >= first.ctx.lease_expires_at - timedelta(milliseconds=5)
    assert again.ctx.id == ack.job_id
    assert again.ctx.attempt == 2
    with pytest.raises(AttemptMismatchError):
        await client.ack(first.ctx)
    await client.ack(again.ctx)


async def test_lease_expiry_on_the_last_attempt_dead_letters_with_lease_expired(client, new_queue):
    q = new_queue()
    ack = await client.enqueue(EnqueueRequest(q, "t", max_attempts=1))
    await reserve_one(client, q, lease=timedelta(milliseconds=150))
    [record] = await drain_until(client, q, 1)
    assert record.job_id == ack.job_id
    assert record.cause == DeadLetterCause.LEASE_EXPIRED
    assert record.final_attempt == 1
    assert record.last_reason is None
    await assert_empty(client, q)


async def test_extend_returns_a_later_expiry_and_keeps_the_job_leased(client, new_queue):
    q = new_queue()
    await client.enqueue(EnqueueRequest(q, "t"))
    job = await reserve_one(client, q, lease=timedelta(seconds=1))
    new_expiry = await client.extend(job.ctx, timedelta(seconds=60))
    assert new_expiry > job.ctx.lease_expires_at
    assert abs(new_expiry - (utcnow() + timedelta(seconds=60))) < timedelta(seconds=2)
    # Extending through the job context works too and measures from now.
    shorter = await job.ctx.extend(timedelta(seconds=10))
    assert shorter < new_expiry
    # Well past the original 1 s lease, the job has not been redelivered.
    assert await client.reserve(opts(q, wait=timedelta(milliseconds=1200))) is None
    await client.ack(job.ctx)


async def test_extend_is_clamped_to_the_queue_max_lease(client):
    await client.enqueue(EnqueueRequest(SHORT_LEASE_QUEUE, "t"))
    job = await reserve_one(client, SHORT_LEASE_QUEUE, lease=timedelta(seconds=1))
    expiry = await client.extend(job.ctx, timedelta(minutes=10))
    assert expiry - utcnow() <= timedelta(seconds=1) + timedelta(milliseconds=50)
    await client.ack(job.ctx)


async def test_extend_after_ack_raises_job_not_found(client, new_queue):
    q = new_queue()
    await client.enqueue(EnqueueRequest(q, "t"))
    job = await reserve_one(client, q)
    await client.ack(job.ctx)
    with pytest.raises(JobNotFoundError):
        await client.extend(job.ctx, timedelta(seconds=5))
    with pytest.raises(JobNotFoundError):
        await client.nack(job.ctx)


# --------------------------------------------------------------------------
# Dead-letter draining
# --------------------------------------------------------------------------


async def _dead_letter(client: SeppClient, queue: str, job_type: str = "t") -> str:
    ack = await client.enqueue(EnqueueRequest(queue, job_type))
    job = await reserve_one(client, queue)
    assert await client.nack(job.ctx, RetryDirective.DEAD_LETTER, f"dead {job_type}") is True
    return ack.job_id


async def test_drain_with_a_queue_filter_returns_only_that_queues_records(client, new_queue):
    a, b = new_queue("a"), new_queue("b")
    a_id = await _dead_letter(client, a)
    b_id = await _dead_letter(client, b)
    b_records = await client.drain_dead_letters(queue=b, max_records=10)
    assert [(r.queue, r.job_id) for r in b_records] == [(b, b_id)]
    a_records = await client.drain_dead_letters(queue=a, max_records=10)
    assert [(r.queue, r.job_id) for r in a_records] == [(a, a_id)]


async def test_drain_returns_oldest_first_up_to_max_and_removes_them(client, new_queue):
    q = new_queue()
    ids = []
    for i in range(3):
        ids.append(await _dead_letter(client, q, f"t{i}"))
        await next_millisecond()  # distinct failed_at milliseconds
    first = await client.drain_dead_letters(queue=q, max_records=2)
    assert [r.job_id for r in first] == ids[:2]
    assert first[0].failed_at <= first[1].failed_at
    rest = await client.drain_dead_letters(queue=q, max_records=2)
    assert [r.job_id for r in rest] == ids[2:]
    assert await client.drain_dead_letters(queue=q, max_records=2) == []


async def test_drained_record_can_be_replayed_as_a_fresh_job(client, new_queue):
    q = new_queue()
    payload = Payload(b"replay-me", "text/plain")
    await client.enqueue(EnqueueRequest(q, "t", payload=payload, priority=2, custom={"x": 1}))
    job = await reserve_one(client, q)
    await client.nack(job.ctx, RetryDirective.DEAD_LETTER, "bad")
    [record] = await client.drain_dead_letters(queue=q)
    ack = await client.enqueue(record.to_enqueue_request())
    assert ack.job_id != record.job_id
    replayed = await reserve_one(client, q)
    assert replayed.ctx.id == ack.job_id
    assert replayed.payload == payload
    assert int(replayed.ctx.priority) == 2
    assert replayed.ctx.custom == {"x": 1}
    assert replayed.ctx.attempt == 1


async def test_without_retention_dead_letters_are_not_kept(start_server, new_queue):
    srv = start_server()
    q = new_queue()
    async with await SeppClient.connect(srv.addr) as c:
        assert (await c.get_server_info()).dead_letter_retention_enabled is False
        await _dead_letter(c, q)
        assert await c.drain_dead_letters(queue=q, max_records=10) == []
        assert await c.drain_dead_letters(max_records=10) == []


@pytest.mark.improvement
async def test_filtered_drain_is_not_starved_by_older_records_of_other_queues(
    start_server, new_queue
):
    srv = start_server({"storage": {"dead_letter_retention_ms": 3_600_000, "sweep_limit": 3}})
    noisy, wanted = new_queue("noisy"), new_queue("wanted")
    async with await SeppClient.connect(srv.addr) as c:
        for i in range(5):
            await _dead_letter(c, noisy, f"n{i}")
        wanted_id = await _dead_letter(c, wanted)
        records = await c.drain_dead_letters(queue=wanted, max_records=10)
        assert [r.job_id for r in records] == [wanted_id]


async def test_reserve_on_an_undeclared_queue_in_strict_mode_raises_unknown_queues(
    start_server,
):
    srv = start_server({"server": {"strict_queues": True}, "queues": [{"name": "known"}]})
    async with await SeppClient.connect(srv.addr) as c:
        with pytest.raises(UnknownQueuesError):
            await c.reserve(opts(["known", "unknown"]))
        assert await c.reserve(opts("known")) is None


# --------------------------------------------------------------------------
# Whole-call reserve validation and clamping
# --------------------------------------------------------------------------


async def test_reserve_naming_more_than_max_reserve_queues_is_an_invalid_request(client, new_queue):
    queues = [new_queue(str(i)) for i in range(33)]
    with pytest.raises(InvalidRequestError) as info:
        await client.reserve(opts(queues))
    assert "reserve exceeds max_reserve_queues (32)" in str(info.value)
    assert await client.reserve(opts(queues[:32])) is None


@pytest.mark.parametrize(
    "name,message",
    [
        (".", 'queues item must not be "." or ".."'),
        ("a/b", "queues item must not contain '/'"),
    ],
)
async def test_reserve_with_an_invalid_queue_name_is_an_invalid_request(client, name, message):
    with pytest.raises(InvalidRequestError) as info:
        await client.reserve(opts(["fine", name]))
    assert message in str(info.value)


async def test_reserve_and_drain_are_clamped_to_max_reserve_batch(start_server, new_queue):
    srv = start_server(
        {"limits": {"max_reserve_batch": 3}, "storage": {"dead_letter_retention_ms": 60_000}}
    )
    q = new_queue()
    async with await SeppClient.connect(srv.addr) as c:
        await c.enqueue_batch([EnqueueRequest(q, "t")] * 5)
        jobs = await c.reserve(opts(q, max_jobs=10))
        assert jobs is not None and len(jobs) == 3
        for job in jobs:
            assert await c.nack(job.ctx, RetryDirective.DEAD_LETTER) is True
        assert len(await c.drain_dead_letters(queue=q, max_records=10)) == 3
