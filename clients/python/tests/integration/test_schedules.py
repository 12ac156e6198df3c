"""Recurring schedules against the real server: a schedule fires its template into a queue, is
listed with what it did, can be replaced and deleted; cron slots follow their time zone; bad
definitions are refused as invalid requests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from sepp import (
    EnqueueRequest,
    InvalidRequestError,
    Job,
    Payload,
    Priority,
    ReserveOptions,
    Schedule,
    ScheduleCatchUp,
    ScheduleInfo,
    ScheduleOverlap,
    SeppClient,
)
from sepp import sync as sepp_sync
from tests.sepp_server import SeppServer

EVERY_SECOND = timedelta(seconds=1)


async def next_fired(client: SeppClient, queue: str) -> Job:
    """The next job in `queue`, waited for with a long poll (a slot comes every second)."""
    options = ReserveOptions([queue], timedelta(seconds=30), wait_timeout=timedelta(seconds=10))
    jobs = await client.reserve(options)
    assert jobs is not None, "no job fired within ten seconds"
    assert len(jobs) == 1
    return jobs[0]


async def listed(client: SeppClient, schedule_id: str) -> ScheduleInfo | None:
    found = [info for info in await client.list_schedules() if info.id == schedule_id]
    assert len(found) <= 1
    return found[0] if found else None


async def test_the_server_offers_schedules(client: SeppClient) -> None:
    assert "schedules" in (await client.get_server_info()).features


async def test_a_schedule_fires_its_template_is_listed_replaced_and_deleted(
    client: SeppClient, queue: str
) -> None:
    template = EnqueueRequest(
        queue,
        "tick",
        payload=Payload(b'{"report": "daily"}', "application/json"),
        priority=Priority.P6,
        max_attempts=4,
        custom={"tenant": "acme", "shard": 3, "dry_run": False},
    )
    schedule = Schedule(f"{queue}-tick", template, every=EVERY_SECOND)
    before = (await client.get_server_info()).server_time
    info = await client.upsert_schedule(schedule)
    assert info.definition == schedule
    assert (info.fired, info.last_job_id, info.last_slot_at) == (0, None, None)
    assert info.created_at >= before - timedelta(seconds=1)
    assert info.next_fire_at is not None
    assert info.next_fire_at - info.created_at == EVERY_SECOND  # slots count from the creation
    try:
        job = await next_fired(client, queue)
        assert job.ctx.job_type == "tick"
        assert job.payload == Payload(b'{"report": "daily"}', "application/json")
        assert (job.ctx.priority, job.ctx.max_attempts) == (Priority.P6, 4)
        assert job.ctx.custom == {"tenant": "acme", "shard": 3, "dry_run": False}
        assert job.ctx.trace_context is None
        await client.ack(job)

        shown = await listed(client, schedule.id)
        assert shown is not None
        assert shown.definition == schedule
        assert shown.fired >= 1
        assert shown.last_slot_at is not None and shown.last_slot_at <= job.ctx.enqueued_at
        assert shown.last_job_id is not None

        # Replace it: a new template and policies; the count it fired so far stays.
        replacement = Schedule(
            schedule.id,
            EnqueueRequest(queue, "tock", custom={"tenant": "globex"}),
            every=EVERY_SECOND,
            overlap=ScheduleOverlap.ALLOW,
            catch_up=ScheduleCatchUp.NONE,
        )
        replaced = await client.upsert_schedule(replacement)
        assert replaced.definition == replacement
        assert replaced.fired >= shown.fired
        assert replaced.created_at >= shown.created_at
        # A "tick" fired before the replacement may still be queued; skip it.
        while (job := await next_fired(client, queue)).ctx.job_type == "tick":
            await client.ack(job)
        assert (job.ctx.job_type, job.ctx.custom, job.payload) == (
            "tock",
            {"tenant": "globex"},
            None,
        )
        assert job.ctx.priority == Priority.P0
        await client.ack(job)
    finally:
        deleted = await client.delete_schedule(schedule.id)
    assert deleted is True
    assert await client.delete_schedule(schedule.id) is False
    assert await listed(client, schedule.id) is None


async def test_a_cron_slot_follows_its_time_zone(client: SeppClient, queue: str) -> None:
    zurich = ZoneInfo("Europe/Zurich")
    schedule = Schedule(
        f"{queue}-zurich", EnqueueRequest(queue, "t"), cron="0 9 * * *", time_zone="Europe/Zurich"
    )
    now = (await client.get_server_info()).server_time
    info = await client.upsert_schedule(schedule)
    try:
        assert info.definition.time_zone == "Europe/Zurich"
        assert info.next_fire_at is not None and info.next_fire_at.tzinfo is timezone.utc
        # 09:00 on the wall clocks of Zurich (07:00 or 08:00 UTC by the season), within a day.
        local = info.next_fire_at.astimezone(zurich)
        assert (local.hour, local.minute, local.second) == (9, 0, 0)
        assert info.next_fire_at.hour == (8 if local.utcoffset() == timedelta(hours=1) else 7)
        assert now < info.next_fire_at <= now + timedelta(hours=25)
        # The day before has its 09:00 already behind it: nothing in between was skipped.
        previous = datetime(local.year, local.month, local.day, 9, tzinfo=zurich) - timedelta(
            days=1
        )
        assert previous.astimezone(timezone.utc) <= now + timedelta(seconds=1)
    finally:
        assert await client.delete_schedule(schedule.id) is True


async def test_a_cron_schedule_without_a_zone_runs_in_utc_and_may_have_seconds(
    client: SeppClient, queue: str
) -> None:
    hourly = Schedule(f"{queue}-utc", EnqueueRequest(queue, "t"), cron="15 * * * *")
    seconds = Schedule(f"{queue}-sec", EnqueueRequest(queue, "t"), cron="30 0 0 1 1 *")
    try:
        info = await client.upsert_schedule(hourly)
        assert info.definition.time_zone == "UTC"
        assert info.next_fire_at is not None
        assert (info.next_fire_at.minute, info.next_fire_at.second) == (15, 0)
        info = await client.upsert_schedule(seconds)
        assert info.next_fire_at is not None
        assert (info.next_fire_at.month, info.next_fire_at.day) == (1, 1)
        assert (info.next_fire_at.hour, info.next_fire_at.minute, info.next_fire_at.second) == (
            0,
            0,
            30,
        )
        ids = [i.id for i in await client.list_schedules()]
        assert ids == sorted(ids) and {hourly.id, seconds.id} <= set(ids)
    finally:
        await client.delete_schedule(hourly.id)
        await client.delete_schedule(seconds.id)


def _refused(queue: str, name: str) -> Schedule:
    return Schedule(f"{queue}-{name}", EnqueueRequest(queue, "t"), every=timedelta(minutes=1))


async def test_definitions_the_server_refuses_are_invalid_requests(
    client: SeppClient, queue: str
) -> None:
    limits = await client.get_server_info()
    bad_cron = Schedule(f"{queue}-cron", EnqueueRequest(queue, "t"), cron="61 * * * *")
    bad_zone = Schedule(
        f"{queue}-zone", EnqueueRequest(queue, "t"), cron="0 9 * * *", time_zone="Mars/Olympus"
    )
    # The server checks again what the client checks: get past the client by changing a valid
    # schedule afterwards.
    too_fast = _refused(queue, "fast")
    object.__setattr__(too_fast, "every", timedelta(milliseconds=500))
    keyed = _refused(queue, "keyed")
    keyed.job.idempotency_key = "once"
    # A template the queue's rules refuse (a queue name over the server's limit).
    long_queue = Schedule(
        f"{queue}-long",
        EnqueueRequest("q" * (limits.max_queue_name_bytes + 1), "t"),
        every=timedelta(minutes=1),
    )
    for schedule, needle in [
        (bad_cron, "cron expression"),
        (bad_zone, "time zone"),
        (too_fast, "1000 ms"),
        (keyed, "idempotency_key"),
        (long_queue, "queue"),
    ]:
        with pytest.raises(InvalidRequestError, match=needle):
            await client.upsert_schedule(schedule)
    ids = {info.id for info in await client.list_schedules()}
    assert not ids & {bad_cron.id, bad_zone.id, too_fast.id, keyed.id, long_queue.id}


def test_the_sync_client_manages_schedules(server: SeppServer, queue: str) -> None:
    schedule = Schedule(f"{queue}-sync", EnqueueRequest(queue, "t"), cron="0 0 1 1 *")
    with sepp_sync.SeppClient.connect(server.addr) as client:
        info = client.upsert_schedule(schedule)
        assert info.definition == schedule
        assert schedule.id in [i.id for i in client.list_schedules()]
        assert client.delete_schedule(schedule.id) is True
        assert client.delete_schedule(schedule.id) is False
        with pytest.raises(InvalidRequestError):
            client.upsert_schedule(
                Schedule(schedule.id, EnqueueRequest(queue, "t"), cron="not a cron")
            )
