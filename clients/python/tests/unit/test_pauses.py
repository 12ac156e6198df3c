"""Pausing queues without a server: the request's conversion and local checks, the pause as read
from the server, and the status mapping of the pause calls."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import grpc
import pytest

from sepp import ALL_QUEUES, InvalidRequestError, QueuePause, UnexpectedStatusError, _convert
from sepp.errors import client_error_from_rpc
from sepp.v1 import queue_pb2 as pb

UTC = timezone.utc


def test_all_queues_is_the_empty_name() -> None:
    assert ALL_QUEUES == ""
    assert QueuePause(ALL_QUEUES).all_queues
    assert not QueuePause("mail").all_queues
    assert QueuePause("mail").until is None


def test_a_pause_request_leaves_unset_what_was_not_given() -> None:
    message = _convert.pause_request_to_pb("mail", None, None)
    assert message.queue == "mail"
    assert not message.HasField("until")
    assert not message.HasField("reason")
    every = _convert.pause_request_to_pb(ALL_QUEUES, None, "")
    assert every.queue == ""
    assert every.HasField("reason") and every.reason == ""  # an empty reason is still sent


def test_a_pause_request_carries_until_and_reason() -> None:
    until = datetime(2030, 1, 2, 3, 4, 5, 678_901, tzinfo=UTC)
    message = _convert.pause_request_to_pb("mail", until, "deploy")
    assert message.until.ToDatetime(tzinfo=UTC) == until
    assert message.reason == "deploy"
    # A naive datetime is UTC, another zone is converted.
    naive = _convert.pause_request_to_pb("mail", until.replace(tzinfo=None), None)
    assert naive.until == message.until
    zurich = timezone(timedelta(hours=1))
    shifted = _convert.pause_request_to_pb("mail", until.astimezone(zurich), None)
    assert shifted.until == message.until


def test_a_pause_request_refuses_what_the_client_can_tell_is_wrong() -> None:
    with pytest.raises(TypeError, match="queue name or ALL_QUEUES"):
        _convert.pause_request_to_pb(None, None, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="until must be a datetime"):
        _convert.pause_request_to_pb("mail", 1_900_000_000, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reason must be a string"):
        _convert.pause_request_to_pb("mail", None, b"deploy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="in the future"):
        _convert.pause_request_to_pb("mail", datetime(1969, 12, 31, tzinfo=UTC), None)
    with pytest.raises(TypeError):
        _convert.check_pause_queue(["mail"])  # type: ignore[arg-type]
    _convert.check_pause_queue(ALL_QUEUES)


def test_a_pause_from_the_server() -> None:
    forever = _convert.pause_from_pb(pb.QueuePause(queue="mail"))
    assert forever == QueuePause("mail", None)
    message = pb.QueuePause(queue="")
    message.until.seconds, message.until.nanos = 1_900_000_000, 123_456_789
    until = _convert.pause_from_pb(message).until
    assert until == datetime(2030, 3, 17, 17, 46, 40, 123_456, tzinfo=UTC)
    assert until is not None and until.tzinfo is UTC
    assert _convert.pause_from_pb(message).all_queues


def test_a_pause_with_an_unreadable_until_is_refused() -> None:
    message = pb.QueuePause(queue="mail")
    message.until.seconds = -5
    with pytest.raises(ValueError, match="invalid until"):
        _convert.pause_from_pb(message)


def test_a_pause_is_frozen_and_compares_by_value() -> None:
    pause = QueuePause("mail", datetime(2030, 1, 1, tzinfo=UTC))
    with pytest.raises(AttributeError):
        pause.queue = "other"  # type: ignore[misc]
    assert pause == QueuePause("mail", datetime(2030, 1, 1, tzinfo=UTC))
    assert pause != QueuePause("mail")


def rpc_error(code: grpc.StatusCode, message: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), message)


def test_the_pause_calls_map_statuses_like_every_call() -> None:
    refused = client_error_from_rpc(
        rpc_error(grpc.StatusCode.INVALID_ARGUMENT, "until must be in the future")
    )
    assert isinstance(refused, InvalidRequestError)
    assert "until must be in the future" in str(refused)
    old = client_error_from_rpc(rpc_error(grpc.StatusCode.UNIMPLEMENTED, "unknown method"))
    assert isinstance(old, UnexpectedStatusError)
