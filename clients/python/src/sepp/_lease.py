"""The lease a reserved job is held under: what ack, nack and extend must echo to the server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .client import SeppClient
    from .types import JobCtx


@dataclass(eq=False)
class Lease:
    """One delivery of a job to this worker.

    The server identifies a lease by the job id *and* the attempt number: once the job is
    redelivered (its lease expired) the old attempt is refused, so a slow worker can never settle
    a job another worker now holds. `expires_at` is the last deadline the server granted; it moves
    with every successful extend. `extend_via`, when set (a Worker's Consume stream), is where
    `JobCtx.extend` sends its extend instead of `client.extend`.
    """

    client: SeppClient
    job_id: str
    attempt: int
    worker_id: str | None
    expires_at: datetime
    extend_via: Callable[[JobCtx, timedelta], Awaitable[datetime]] | None = None
