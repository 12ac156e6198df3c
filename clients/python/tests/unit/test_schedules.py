"""Recurring schedules without a server: local validation, conversions and status mapping."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import grpc
import pytest

from sepp import (
    EnqueueRequest,
    InvalidRequestError,
    Payload,
    Priority,
    Schedule,
    ScheduleCatchUp,
    ScheduleInfo,
    ScheduleLimitError,
    ScheduleOverlap,
    TraceContext,
    UnexpectedStatusError,
    _convert,
)
from sepp.errors import schedule_error_from_rpc
from sepp.v1 import queue_pb2 as pb

UTC = timezone.utc
TEMPLATE = EnqueueRequest("reports", "nightly")
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_a_schedule_needs_exactly_one_cadence() -> None:
    with pytest.raises(ValueError, match="exactly one cadence"):
        Schedule("s", TEMPLATE)
    with pytest.raises(ValueError, match="exactly one cadence"):
        Schedule("s", TEMPLATE, cron="0 9 * * *", every=timedelta(minutes=1))
    with pytest.raises(ValueError, match="non-empty cron"):
        Schedule("s", TEMPLATE, cron=" ")
    assert Schedule("s", TEMPLATE, cron="0 9 * * *").time_zone == "UTC"
    assert Schedule("s", TEMPLATE, every=timedelta(seconds=1)).every == timedelta(seconds=1)


def test_an_interval_is_at_least_one_second() -> None:
    with pytest.raises(ValueError, match="at least 1 s"):
        Schedule("s", TEMPLATE, every=timedelta(milliseconds=999))
    with pytest.raises(ValueError, match="at least 1 s"):
        Schedule("s", TEMPLATE, every=timedelta(seconds=-5))
    with pytest.raises(TypeError):
        Schedule("s", TEMPLATE, every=60)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="time_zone goes with cron"):
        Schedule("s", TEMPLATE, every=timedelta(minutes=1), time_zone="Europe/Zurich")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("idempotency_key", "once"),
        ("trace_context", TraceContext(TRACEPARENT)),
        ("scheduled_at", datetime(2030, 1, 1, tzinfo=UTC)),
    ],
)
def test_the_template_must_not_set_per_job_fields(field: str, value: object) -> None:
    job = EnqueueRequest("q", "t", **{field: value})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=field):
        Schedule("s", job, every=timedelta(minutes=1))


def test_schedule_ids() -> None:
    for bad, needle in [
        ("", "empty"),
        ("x" * 129, "at most 128 bytes"),
        ("é" * 65, "at most 128 bytes"),  # 130 bytes in UTF-8
        ("a\nb", "control"),
        ("a\x7fb", "control"),
    ]:
        with pytest.raises(ValueError, match=needle):
            Schedule(bad, TEMPLATE, every=timedelta(minutes=1))
    assert Schedule("x" * 128, TEMPLATE, every=timedelta(minutes=1)).id == "x" * 128
    assert Schedule("ünïcode report", TEMPLATE, every=timedelta(minutes=1)).id


def test_policies_accept_their_values_and_nothing_else() -> None:
    schedule = Schedule(
        "s",
        TEMPLATE,
        every=timedelta(minutes=1),
        overlap="allow",
        catch_up="none",  # type: ignore[arg-type]
    )
    assert schedule.overlap is ScheduleOverlap.ALLOW and schedule.catch_up is ScheduleCatchUp.NONE
    with pytest.raises(ValueError):
        Schedule("s", TEMPLATE, every=timedelta(minutes=1), overlap="sometimes")  # type: ignore[arg-type]


def test_a_cron_schedule_on_the_wire() -> None:
    job = EnqueueRequest(
        "reports",
        "nightly",
        payload=Payload(b"{}", "application/json"),
        priority=7,
        max_attempts=2,
        custom={"tenant": "acme", "n": 3, "on": True, "ratio": 0.5},
    )
    schedule = Schedule(
        "nightly-report",
        job,
        cron="0 9 * * MON-FRI",
        time_zone="Europe/Zurich",
        overlap=ScheduleOverlap.ALLOW,
        catch_up=ScheduleCatchUp.NONE,
    )
    message = _convert.schedule_to_pb(schedule)
    assert message.id == "nightly-report"
    assert message.WhichOneof("cadence") == "cron"
    assert (message.cron.expression, message.cron.time_zone) == ("0 9 * * MON-FRI", "Europe/Zurich")
    assert message.overlap == pb.SCHEDULE_OVERLAP_ALLOW
    assert message.catch_up == pb.SCHEDULE_CATCH_UP_NONE
    template = message.job
    assert (template.queue, template.job_type, template.priority, template.max_attempts) == (
        "reports",
        "nightly",
        7,
        2,
    )
    assert template.payload == pb.Payload(data=b"{}", encoding="application/json")
    assert template.custom["n"].int_value == 3 and template.custom["on"].bool_value is True
    assert template.custom["ratio"].double_value == 0.5
    for unset in ("idempotency_key", "trace_context", "scheduled_at"):
        assert not template.HasField(unset)
    # And back: what the server shows converts to the same definition.
    assert _convert.schedule_from_pb(message) == schedule


def test_an_interval_schedule_on_the_wire_keeps_unset_fields_unset() -> None:
    schedule = Schedule(
        "tick", EnqueueRequest("q", "t"), every=timedelta(seconds=90, microseconds=5)
    )
    message = _convert.schedule_to_pb(schedule)
    assert message.WhichOneof("cadence") == "every"
    assert (message.every.seconds, message.every.nanos) == (90, 5000)
    # The defaults are sent explicitly: SKIP and LATEST, which the server also assumes for 0.
    assert (message.overlap, message.catch_up) == (
        pb.SCHEDULE_OVERLAP_SKIP,
        pb.SCHEDULE_CATCH_UP_LATEST,
    )
    for unset in ("payload", "priority", "max_attempts"):
        assert not message.job.HasField(unset)
    back = _convert.schedule_from_pb(message)
    assert back == schedule
    assert back.job.priority is None and back.job.max_attempts is None


def test_unspecified_policies_and_an_empty_time_zone_read_as_the_defaults() -> None:
    message = pb.ScheduleDefinition(
        id="s",
        cron=pb.CronCadence(expression="* * * * *"),
        job=pb.EnqueueRequest(queue="q", job_type="t"),
    )
    schedule = _convert.schedule_from_pb(message)
    assert schedule.time_zone == "UTC"
    assert (schedule.overlap, schedule.catch_up) == (ScheduleOverlap.SKIP, ScheduleCatchUp.LATEST)


def wire_info(**fields: object) -> pb.ScheduleInfo:
    info = pb.ScheduleInfo(
        definition=pb.ScheduleDefinition(
            id="tick", job=pb.EnqueueRequest(queue="q", job_type="t", priority=3)
        ),
        fired=4,
    )
    info.definition.every.seconds = 60
    info.created_at.seconds = 1_700_000_000
    info.next_fire_at.seconds = 1_700_000_300
    info.last_slot_at.seconds = 1_700_000_240
    info.last_job_id = "0190c7a0-0000-7000-8000-000000000000"
    for name in fields:
        info.ClearField(name)  # type: ignore[arg-type]
    return info


def test_schedule_info_from_the_wire() -> None:
    info = _convert.schedule_info_from_pb(wire_info())
    assert isinstance(info, ScheduleInfo)
    assert info.id == "tick" and info.definition.every == timedelta(seconds=60)
    assert info.definition.job.priority == Priority.P3
    assert info.fired == 4
    assert info.created_at == datetime.fromtimestamp(1_700_000_000, UTC)
    assert info.next_fire_at == datetime.fromtimestamp(1_700_000_300, UTC)
    assert info.last_slot_at == datetime.fromtimestamp(1_700_000_240, UTC)
    assert info.created_at.tzinfo is UTC
    assert info.last_job_id == "0190c7a0-0000-7000-8000-000000000000"


def test_a_schedule_that_has_not_fired_has_no_last_slot_or_job() -> None:
    info = _convert.schedule_info_from_pb(wire_info(last_slot_at=1, last_job_id=1, next_fire_at=1))
    assert (info.last_slot_at, info.last_job_id, info.next_fire_at) == (None, None, None)


def test_malformed_schedule_infos_raise_value_error() -> None:
    with pytest.raises(ValueError, match="created_at"):
        _convert.schedule_info_from_pb(wire_info(created_at=1))
    with pytest.raises(ValueError, match="definition"):
        _convert.schedule_info_from_pb(pb.ScheduleInfo())
    no_cadence = wire_info()
    no_cadence.definition.ClearField("every")
    with pytest.raises(ValueError, match="cadence"):
        _convert.schedule_info_from_pb(no_cadence)
    bad_policy = wire_info()
    bad_policy.definition.overlap = 9  # type: ignore[assignment]
    with pytest.raises(ValueError, match="policy"):
        _convert.schedule_info_from_pb(bad_policy)


def rpc_error(code: grpc.StatusCode, message: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), message)


def test_schedule_errors() -> None:
    limit = schedule_error_from_rpc(rpc_error(grpc.StatusCode.FAILED_PRECONDITION, "too many"))
    assert type(limit) is ScheduleLimitError and "too many" in str(limit)
    invalid = schedule_error_from_rpc(rpc_error(grpc.StatusCode.INVALID_ARGUMENT, "bad cron"))
    assert type(invalid) is InvalidRequestError and "bad cron" in str(invalid)
    old = schedule_error_from_rpc(rpc_error(grpc.StatusCode.UNIMPLEMENTED, "no such method"))
    assert type(old) is UnexpectedStatusError and old.code == grpc.StatusCode.UNIMPLEMENTED
