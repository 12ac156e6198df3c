"""The Worker's decisions, the retry backoff, status mapping and channel settings."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import grpc
import pytest

from sepp import (
    AttemptMismatchError,
    HandlerError,
    InvalidApiKeyError,
    JobNotFoundError,
    RetryDirective,
    RetryPolicy,
    TransportError,
    UnexpectedStatusError,
    UnknownQueuesError,
    Worker,
    _channel,
)
from sepp.errors import (
    KEYLESS_ENQUEUE_RETRYABLE_CODES,
    RETRYABLE_CODES,
    client_error_from_rpc,
    lease_error_from_rpc,
    reserve_error_from_rpc,
)
from sepp.worker import _decisions, default_worker_id

NOW = datetime(2030, 1, 1, tzinfo=timezone.utc)


def test_a_reserve_asks_for_the_free_capacity() -> None:
    assert _decisions.reserve_size(None, 16, 0) == 16
    assert _decisions.reserve_size(None, 16, 15) == 1
    assert _decisions.reserve_size(None, 16, 16) == 1  # never zero
    assert _decisions.reserve_size(4, 16, 0) == 4
    assert _decisions.reserve_size(4, 16, 14) == 2


def test_only_a_quick_empty_answer_earns_a_pause() -> None:
    wait = timedelta(seconds=30)
    assert _decisions.pause_after_empty(timedelta(milliseconds=5), wait) == timedelta(
        milliseconds=250
    )
    assert _decisions.pause_after_empty(timedelta(seconds=30), wait) == timedelta(0)
    short = timedelta(milliseconds=100)  # the limit is half the wait here: 50 ms
    assert _decisions.pause_after_empty(timedelta(milliseconds=60), short) == timedelta(0)
    assert _decisions.pause_after_empty(timedelta(milliseconds=40), short) > timedelta(0)


def test_failure_backoff_doubles_per_attempt_up_to_a_minute() -> None:
    assert [_decisions.failure_backoff(a).total_seconds() for a in (1, 2, 3, 5, 6, 50)] == [
        2,
        4,
        8,
        32,
        60,
        60,
    ]


def test_the_heartbeat_runs_at_a_third_of_the_granted_lease() -> None:
    expires = NOW + timedelta(seconds=30)
    assert _decisions.heartbeat_interval(None, expires, NOW) == timedelta(seconds=10)
    assert _decisions.heartbeat_interval(None, NOW - timedelta(seconds=1), NOW) == timedelta(
        milliseconds=1
    )
    assert _decisions.heartbeat_interval(timedelta(seconds=2), expires, NOW) == timedelta(seconds=2)
    assert _decisions.lease_lost_after_failed_extend(NOW, NOW)
    assert not _decisions.lease_lost_after_failed_extend(expires, NOW)


def test_handler_failures_map_to_nacks() -> None:
    assert _decisions.nack_for_failure(HandlerError.retry("r"), 1) == (RetryDirective.DEFAULT, "r")
    later = HandlerError.retry_after("l", timedelta(seconds=9))
    assert _decisions.nack_for_failure(later, 1) == (
        RetryDirective.after(timedelta(seconds=9)),
        "l",
    )
    assert _decisions.nack_for_failure(HandlerError.permanent("p"), 1) == (
        RetryDirective.DEAD_LETTER,
        "p",
    )
    directive, reason = _decisions.nack_for_failure(KeyError("x"), 3)
    assert directive == RetryDirective.after(timedelta(seconds=8))
    assert reason == "handler raised: KeyError: 'x'"
    _, long_reason = _decisions.nack_for_failure(ValueError("x" * 5000), 1)
    assert len(long_reason) == _decisions.MAX_REASON_CHARS
    assert _decisions.nack_for_missing_handler(2) == (
        RetryDirective.after(timedelta(seconds=4)),
        "no handler registered for job_type",
    )


def test_handler_error_carries_reason_and_directive() -> None:
    error = HandlerError.retry_after("later", timedelta(seconds=1))
    assert str(error) == "later" and error.directive.kind == "after"
    assert HandlerError("x").directive is RetryDirective.DEFAULT


def test_backoff_grows_by_the_multiplier_to_the_cap_with_equal_jitter() -> None:
    policy = RetryPolicy(
        max_attempts=9,
        initial_backoff=timedelta(seconds=1),
        max_backoff=timedelta(seconds=5),
        jitter=False,
    )
    delays = policy.delays()
    assert [next(delays) for _ in range(5)] == [1, 2, 4, 5, 5]
    jittered = RetryPolicy(max_attempts=9, initial_backoff=timedelta(seconds=1)).delays(
        random.Random(7)
    )
    for n in range(12):
        base = min(2.0**n, 10.0)  # the backoff before jitter: 1, 2, 4, 8, then the 10 s cap
        assert 0.5 * base <= next(jittered) < base


def test_which_failures_are_retried() -> None:
    policy = RetryPolicy(max_attempts=3)
    assert policy.should_retry(grpc.StatusCode.UNAVAILABLE, 1, RETRYABLE_CODES)
    assert not policy.should_retry(grpc.StatusCode.UNAVAILABLE, 3, RETRYABLE_CODES)
    for code in (
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.CANCELLED,
    ):
        assert not policy.should_retry(code, 1, RETRYABLE_CODES)
    for code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED):
        assert policy.should_retry(code, 1, RETRYABLE_CODES)
        assert not policy.should_retry(code, 1, KEYLESS_ENQUEUE_RETRYABLE_CODES)


class FakeRpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str = "why") -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


def test_status_mapping_by_call_family() -> None:
    assert isinstance(
        lease_error_from_rpc(FakeRpcError(grpc.StatusCode.NOT_FOUND)), JobNotFoundError
    )
    assert isinstance(
        lease_error_from_rpc(FakeRpcError(grpc.StatusCode.FAILED_PRECONDITION)),
        AttemptMismatchError,
    )
    assert isinstance(
        reserve_error_from_rpc(FakeRpcError(grpc.StatusCode.FAILED_PRECONDITION)),
        UnknownQueuesError,
    )
    cancelled = client_error_from_rpc(FakeRpcError(grpc.StatusCode.CANCELLED))
    assert isinstance(cancelled, TransportError) and cancelled.code is grpc.StatusCode.CANCELLED
    odd = client_error_from_rpc(FakeRpcError(grpc.StatusCode.NOT_FOUND, "gone"))
    assert isinstance(odd, UnexpectedStatusError) and odd.status_message == "gone"


def test_address_forms() -> None:
    assert _channel.parse_address("127.0.0.1:50051") == ("127.0.0.1:50051", None)
    assert _channel.parse_address("http://h:1") == ("h:1", False)
    assert _channel.parse_address("HTTPS://h:1/") == ("h:1", True)
    assert _channel.parse_address("unix:/tmp/sock") == ("unix:/tmp/sock", None)
    for bad in ("", "   ", "https://", "https://h:1/x"):
        with pytest.raises(ValueError):
            _channel.parse_address(bad)


def test_channel_settings() -> None:
    options = dict(_channel.channel_options(32 << 20, "name.example"))
    assert options["grpc.keepalive_time_ms"] == 30_000
    assert options["grpc.keepalive_timeout_ms"] == 10_000
    assert options["grpc.keepalive_permit_without_calls"] == 1
    assert str(options["grpc.primary_user_agent"]).startswith("sepp-py/")
    assert options["grpc.max_receive_message_length"] == 32 << 20
    assert options["grpc.ssl_target_name_override"] == "name.example"
    assert "grpc.max_receive_message_length" not in dict(_channel.channel_options(None, None))
    assert _channel.auth_metadata("k") == (("authorization", "Bearer k"),)
    with pytest.raises(InvalidApiKeyError):
        _channel.auth_metadata("line\r\nbreak")


def test_worker_configuration_is_checked() -> None:
    client = object()
    worker = Worker(client, ["q"], timedelta(seconds=1), max_in_flight=0)  # type: ignore[arg-type]
    assert worker.max_in_flight == 1
    host, pid, suffix = default_worker_id().rsplit("-", 2)
    assert host and pid.isdigit() and len(suffix) == 8
    with pytest.raises(ValueError):
        Worker(client, ["q"], timedelta(seconds=1), wait_timeout=timedelta(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Worker(client, ["q"], timedelta(seconds=1), worker_id="")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Worker(client, "q", timedelta(seconds=1))  # type: ignore[arg-type]
    assert Worker(
        client, ["q"], timedelta(seconds=1), auto_extend_interval=timedelta(0)
    )._auto_extend  # type: ignore[arg-type]


def test_handler_registration() -> None:
    from sepp import DuplicateHandlerError

    worker = Worker(object(), ["q"], timedelta(seconds=1))  # type: ignore[arg-type]

    async def first(payload: object, ctx: object) -> None: ...

    async def second(payload: object, ctx: object) -> None: ...

    assert worker.handle("a", first) is worker
    with pytest.raises(DuplicateHandlerError):
        worker.handle("a", second)
    assert worker.replace_handler("a", second) is worker
    assert worker._handlers["a"] is second
    assert worker.remove_handler("a").remove_handler("missing") is worker
    assert worker.handler("b")(first) is first and worker._handlers["b"] is first
    assert worker.catch_all(first) is first and worker.catch_all(second) is second
    assert worker._catch_all is second
    with pytest.raises(ValueError):
        worker.handle("", first)
    with pytest.raises(TypeError):
        worker.handle("c", "not callable")  # type: ignore[arg-type]
