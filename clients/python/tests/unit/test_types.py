"""Validation of the request types, directives and policies (no server involved)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sepp import (
    EnqueueRequest,
    Priority,
    PriorityOutOfRangeError,
    ReserveOptions,
    RetryDirective,
    RetryPolicy,
    TraceContext,
    TraceContextError,
)

VALID = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_priority_accepts_0_to_9_and_nothing_else() -> None:
    assert [int(p) for p in (Priority.MIN, Priority.P5, Priority.MAX)] == [0, 5, 9]
    assert Priority(3) < Priority(7) and str(Priority.P7) == "7" and Priority(4) == Priority.P4
    for bad in (-1, 10, True, False):
        with pytest.raises(PriorityOutOfRangeError) as caught:
            Priority(bad)
        assert caught.value.value is bad and isinstance(caught.value, ValueError)


def test_an_enqueue_request_needs_names_and_coerces_a_bare_priority() -> None:
    assert EnqueueRequest("q", "t", priority=7).priority == Priority.P7
    assert EnqueueRequest("q", "t").custom == {}
    with pytest.raises(ValueError):
        EnqueueRequest("", "t")
    with pytest.raises(ValueError):
        EnqueueRequest("q", "")
    with pytest.raises(PriorityOutOfRangeError):
        EnqueueRequest("q", "t", priority=12)


@pytest.mark.parametrize(
    "traceparent",
    [
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",  # three fields
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-xx",  # five
        "0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  # short version
        "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",  # short trace id
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",  # short span id
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",  # zero trace id
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  # zero span id
        "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",  # not hex
        "00-0af7651916cd43dd8448eb211c8031_c-b7ad6b7169203331-01",  # int() would take "_"
        "",
    ],
)
def test_invalid_traceparents_are_refused(traceparent: str) -> None:
    with pytest.raises(TraceContextError):
        TraceContext(traceparent)


def test_a_valid_traceparent_in_either_case() -> None:
    context = TraceContext(VALID.upper(), "k=v")
    assert context.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert context.span_id == "b7ad6b7169203331"


def test_reserve_options_validation() -> None:
    opts = ReserveOptions(("a", "b"), timedelta(seconds=1))  # type: ignore[arg-type]
    assert opts.queues == ["a", "b"] and opts.wait_timeout == timedelta(seconds=30)
    assert ReserveOptions(["q"], timedelta(milliseconds=1), wait_timeout=timedelta(0))
    bad: list[dict[str, object]] = [
        {"queues": []},
        {"queues": ["a", ""]},
        {"lease_duration": timedelta(microseconds=999)},
        {"wait_timeout": timedelta(seconds=-1)},
        {"worker_id": ""},
        {"max_jobs": 0},
    ]
    for override in bad:
        fields: dict[str, object] = {"queues": ["q"], "lease_duration": timedelta(seconds=1)}
        fields.update(override)
        with pytest.raises(ValueError):
            ReserveOptions(**fields)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ReserveOptions("emails", timedelta(seconds=1))  # type: ignore[arg-type]


def test_retry_directives() -> None:
    assert RetryDirective.default() is RetryDirective.DEFAULT
    assert RetryDirective.dead_letter() is RetryDirective.DEAD_LETTER
    after = RetryDirective.after(timedelta(seconds=3))
    assert (after.kind, after.delay) == ("after", timedelta(seconds=3))
    with pytest.raises(ValueError):
        RetryDirective.after(timedelta(seconds=-1))
    with pytest.raises(ValueError):
        RetryDirective("sometime")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        RetryDirective("default", timedelta(seconds=1))


def test_retry_policy_clamps_its_floors() -> None:
    assert RetryPolicy().max_attempts == 1
    policy = RetryPolicy(max_attempts=0, multiplier=0.5)
    assert (policy.max_attempts, policy.multiplier) == (1, 1.0)
    with pytest.raises(ValueError):
        RetryPolicy(initial_backoff=timedelta(seconds=-1))
