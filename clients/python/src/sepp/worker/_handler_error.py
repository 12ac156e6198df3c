"""`HandlerError`: how a handler tells the Worker to nack its job, and how."""

from __future__ import annotations

from datetime import timedelta

from .._retry import RetryDirective
from ..errors import SeppError


class HandlerError(Exception):
    """Raise from a handler to nack the job with a reason and a retry directive.

    * `HandlerError.retry(reason)` - retry under the queue's retry policy;
    * `HandlerError.retry_after(reason, delay)` - retry once `delay` has passed;
    * `HandlerError.permanent(reason)` - dead-letter the job now.

    Any other exception from a handler is treated as a crash (logged, then retried after a
    backoff); it never stops the worker.
    """

    def __init__(self, reason: str, directive: RetryDirective = RetryDirective.DEFAULT) -> None:
        super().__init__(reason)
        self.reason = reason
        self.directive = directive

    def __str__(self) -> str:
        return self.reason

    @classmethod
    def retry(cls, reason: str) -> HandlerError:
        return cls(reason, RetryDirective.DEFAULT)

    @classmethod
    def retry_after(cls, reason: str, delay: timedelta) -> HandlerError:
        return cls(reason, RetryDirective.after(delay))

    @classmethod
    def permanent(cls, reason: str) -> HandlerError:
        return cls(reason, RetryDirective.DEAD_LETTER)


class DuplicateHandlerError(SeppError):
    """A handler is already registered for this job type (use `replace_handler`)."""

    def __init__(self, job_type: str) -> None:
        super().__init__(f"a handler for job_type {job_type!r} is already registered")
        self.job_type = job_type
