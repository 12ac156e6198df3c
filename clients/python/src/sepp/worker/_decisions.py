"""The Worker's decisions as small pure functions of their inputs (time comes in as an argument).

Kept apart from the loop so each rule can be tested on its own, without a server or a clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from .._retry import RetryDirective
from ._handler_error import HandlerError

# Below this much time an empty reserve answer was not a real long poll: the server is probably
# shutting down or answering at once, so the worker pauses instead of spinning.
QUICK_EMPTY_LIMIT = timedelta(milliseconds=100)
QUICK_EMPTY_PAUSE = timedelta(milliseconds=250)
# Floor of the heartbeat interval, so a lease that is already due does not spin the loop.
MIN_HEARTBEAT = timedelta(milliseconds=1)
# Cap of the redelivery delay for jobs nobody can handle or whose handler crashed.
MAX_FAILURE_BACKOFF = timedelta(seconds=60)
# The server stores a nack reason; a runaway exception message is cut to this many characters.
MAX_REASON_CHARS = 1000

NO_HANDLER_REASON = "no handler registered for job_type"


def reserve_size(max_jobs: int | None, max_in_flight: int, in_flight: int) -> int:
    """How many jobs the next reserve asks for: the free capacity, capped by `max_jobs`."""
    free = max(1, max_in_flight - in_flight)
    return free if max_jobs is None else min(max_jobs, free)


def pause_after_empty(elapsed: timedelta, wait_timeout: timedelta) -> timedelta:
    """How long to pause after an empty reserve answer that took `elapsed`.

    An answer faster than min(100 ms, wait_timeout / 2) earns a 250 ms pause; an answer after a
    real long poll earns none (poll again at once).
    """
    limit = min(QUICK_EMPTY_LIMIT, wait_timeout / 2)
    return QUICK_EMPTY_PAUSE if elapsed < limit else timedelta(0)


def failure_backoff(attempt: int) -> timedelta:
    """The redelivery delay after a crash or a missing handler: 2^attempt s, at most 60 s."""
    if attempt >= 6:
        return MAX_FAILURE_BACKOFF
    return min(timedelta(seconds=2 ** max(attempt, 0)), MAX_FAILURE_BACKOFF)


def heartbeat_interval(
    explicit: timedelta | None, lease_expires_at: datetime, now: datetime
) -> timedelta:
    """The time until the next lease extension.

    The explicit interval if one was configured, else a third of the lease time left (measured
    from the deadline the server actually granted, which may be shorter than the one asked for),
    never less than 1 ms.
    """
    if explicit is not None:
        return max(explicit, MIN_HEARTBEAT)
    return max((lease_expires_at - now) / 3, MIN_HEARTBEAT)


def lease_lost_after_failed_extend(lease_expires_at: datetime, now: datetime) -> bool:
    """After an extend failed for a reason other than a lost lease: is the lease gone anyway?"""
    return now >= lease_expires_at


def nack_for_failure(error: Exception, attempt: int) -> tuple[RetryDirective, str]:
    """The nack that settles a job whose handler raised `error`.

    A `HandlerError` says itself what to do. Any other exception is a crash: the job is retried
    after `failure_backoff(attempt)`, so a handler that always fails does not spin the queue.
    """
    if isinstance(error, HandlerError):
        return error.directive, clip_reason(error.reason)
    reason = f"handler raised: {type(error).__name__}: {error}"
    return RetryDirective.after(failure_backoff(attempt)), clip_reason(reason)


def nack_for_missing_handler(attempt: int) -> tuple[RetryDirective, str]:
    """The nack for a job whose type has no handler (and no catch-all is registered)."""
    return RetryDirective.after(failure_backoff(attempt)), NO_HANDLER_REASON


def clip_reason(reason: str) -> str:
    if len(reason) <= MAX_REASON_CHARS:
        return reason
    return reason[: MAX_REASON_CHARS - 3] + "..."
