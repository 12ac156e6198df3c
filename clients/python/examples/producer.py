"""Enqueue jobs every way there is: one, a best-effort batch, an atomic batch.

SEPP_ADDR=127.0.0.1:50051 python examples/producer.py
"""

from __future__ import annotations

import asyncio
import os
from datetime import datetime, timedelta, timezone

from sepp import (
    BatchValidationError,
    EnqueueAck,
    EnqueueRequest,
    JobRejectedError,
    Payload,
    Priority,
    SeppClient,
)

ADDR = os.environ.get("SEPP_ADDR", "127.0.0.1:50051")


def welcome(user_id: int) -> EnqueueRequest:
    return EnqueueRequest(
        "emails",
        "send_welcome",
        payload=Payload(f'{{"user": {user_id}}}'.encode(), "application/json"),
        priority=Priority.P5,
        idempotency_key=f"welcome-{user_id}",  # enqueueing it twice keeps one job
        max_attempts=5,
        custom={"user_id": user_id, "vip": user_id % 10 == 0},
    )


async def main() -> None:
    async with await SeppClient.connect(ADDR) as client:
        info = await client.get_server_info()
        print(f"server {info.version}, at most {info.max_enqueue_batch} jobs per batch")

        try:
            ack = await client.enqueue(welcome(1))
            print("one job:", ack.job_id, "(duplicate)" if ack.deduplicated else "")
        except JobRejectedError as err:
            print("rejected:", err.rejection.message)

        reminder = EnqueueRequest(
            "emails",
            "send_reminder",
            scheduled_at=datetime.now(timezone.utc) + timedelta(minutes=5),
        )
        results = await client.enqueue_batch([welcome(2), welcome(3), reminder])
        for result in results:
            if isinstance(result, EnqueueAck):
                print("batch job:", result.job_id)
            else:
                print("batch rejection:", result.message)

        try:
            acks = await client.enqueue_atomic([welcome(4), welcome(5)])
            print("atomic jobs:", [a.job_id for a in acks])
        except BatchValidationError as err:
            for failure in err.errors:
                print(f"atomic job {failure.index} rejected: {failure.rejection.message}")


if __name__ == "__main__":
    asyncio.run(main())
