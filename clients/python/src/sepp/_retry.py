"""Retrying failed calls (`RetryPolicy`), and telling the server how to retry a job
(`RetryDirective`).

The two are unrelated except by name:

* `RetryPolicy` is transport-level: when a *call* fails with a transient status, try the same
  call again after a backoff. It is opt-in (the default makes one attempt), never applies to
  reserve (a long poll) or to draining dead letters (destructive: a lost answer would lose the
  records), and for an enqueue with a job that has no idempotency key it leaves out the two codes
  after which the jobs may already be committed. Following a cluster follower's redirect to the
  leader is no retry (the follower executed nothing) and happens within one attempt, for every
  call (see `_cluster`).
* `RetryDirective` is job-level: what a nack asks the server to do with the job.

A client that knows it talks to a cluster (a node named the leader, or `get_server_info`
answered with `cluster`) rides a failover on top of the policy: once the policy's attempts are
used up, a call that failed with a code it may retry (never RESOURCE_EXHAUSTED, which is
overload, not failover; a reserve on UNAVAILABLE) goes again until `failover_window` (15 s by
default) has passed since the first such failure, every `initial_backoff` at first and at most
every second.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import ClassVar, Literal

import grpc

__all__ = ["RetryDirective", "RetryPolicy"]


@dataclass
class RetryPolicy:
    """Exponential backoff with jitter for transient call failures.

    Before retry *n* the client sleeps the current backoff (starting at `initial_backoff`) times a
    random factor in [0.5, 1.0) when `jitter` is on, then multiplies the backoff by `multiplier`,
    up to `max_backoff`. `max_attempts` counts the first try: 1 (the default) never retries.
    Values below 1 for `max_attempts` or below 1.0 for `multiplier` are raised to those floors.
    """

    max_attempts: int = 1
    initial_backoff: timedelta = timedelta(milliseconds=100)
    max_backoff: timedelta = timedelta(seconds=10)
    multiplier: float = 2.0
    jitter: bool = True
    #: How long a call to a cluster keeps being retried, once the attempts are used up, while
    #: the cluster fails over; `timedelta(0)` turns it off (see the module).
    failover_window: timedelta = timedelta(seconds=15)

    def __post_init__(self) -> None:
        self.max_attempts = max(1, int(self.max_attempts))
        self.multiplier = max(1.0, float(self.multiplier))
        if self.initial_backoff < timedelta(0) or self.max_backoff < timedelta(0):
            raise ValueError("backoffs must not be negative")

    def should_retry(
        self, code: grpc.StatusCode, attempt: int, codes: frozenset[grpc.StatusCode]
    ) -> bool:
        """Whether a call that failed with `code` on its `attempt`-th try (1-based) goes again."""
        return attempt < self.max_attempts and code in codes

    def delays(self, rng: random.Random | None = None) -> _Delays:
        """The sleeps before retries 1, 2, ... (an endless iterator), in seconds."""
        return _Delays(self, rng or _rng)

    def failover_delays(self, rng: random.Random | None = None) -> _Delays:
        """The sleeps between the retries that ride a cluster failover: from `initial_backoff`,
        growing by `multiplier`, to at most `FAILOVER_MAX_BACKOFF`."""
        capped = replace(
            self,
            initial_backoff=min(self.initial_backoff, FAILOVER_MAX_BACKOFF),
            max_backoff=FAILOVER_MAX_BACKOFF,
        )
        return _Delays(capped, rng or _rng)


# The longest backoff between the retries that ride a cluster failover, so that a call reaches
# the new leader within about a second of its election.
FAILOVER_MAX_BACKOFF = timedelta(seconds=1)


_rng = random.Random()


class _Delays:
    """Backoff state of one call: each `next()` is the sleep before the next retry."""

    def __init__(self, policy: RetryPolicy, rng: random.Random) -> None:
        self._backoff = policy.initial_backoff.total_seconds()
        self._max = policy.max_backoff.total_seconds()
        self._multiplier = policy.multiplier
        self._jitter = policy.jitter
        self._rng = rng

    def __iter__(self) -> _Delays:
        return self

    def __next__(self) -> float:
        delay = min(self._backoff, self._max)
        if self._jitter:
            delay *= 0.5 + 0.5 * self._rng.random()  # [0.5, 1.0): "equal jitter"
        self._backoff = min(self._backoff * self._multiplier, self._max)
        return delay


DirectiveKind = Literal["default", "after", "dead_letter"]


@dataclass(frozen=True)
class RetryDirective:
    """What a nack asks the server to do with the job.

    * `RetryDirective.DEFAULT` / `default()`: retry under the queue's own retry policy;
    * `after(delay)`: retry once `delay` has passed;
    * `RetryDirective.DEAD_LETTER` / `dead_letter()`: give up and dead-letter it now.
    """

    kind: DirectiveKind
    delay: timedelta | None = None

    DEFAULT: ClassVar[RetryDirective]
    DEAD_LETTER: ClassVar[RetryDirective]

    def __post_init__(self) -> None:
        if self.kind not in ("default", "after", "dead_letter"):
            raise ValueError(f"unknown retry directive kind {self.kind!r}")
        if self.kind == "after":
            if self.delay is None:
                raise ValueError("RetryDirective.after needs a delay")
            if self.delay < timedelta(0):
                raise ValueError("a retry delay must not be negative")
        elif self.delay is not None:
            raise ValueError(f"a {self.kind!r} retry directive takes no delay")

    @classmethod
    def default(cls) -> RetryDirective:
        return cls.DEFAULT

    @classmethod
    def after(cls, delay: timedelta) -> RetryDirective:
        return cls("after", delay)

    @classmethod
    def dead_letter(cls) -> RetryDirective:
        return cls.DEAD_LETTER


RetryDirective.DEFAULT = RetryDirective("default")
RetryDirective.DEAD_LETTER = RetryDirective("dead_letter")
