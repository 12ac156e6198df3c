"""The raw consumer calls: reserve a batch, then ack, nack or extend each job yourself.

SEPP_ADDR=127.0.0.1:50051 python examples/manual.py
"""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

from sepp import JobNotFoundError, ReserveOptions, RetryDirective, SeppClient

ADDR = os.environ.get("SEPP_ADDR", "127.0.0.1:50051")


async def main() -> None:
    async with await SeppClient.connect(ADDR) as client:
        options = ReserveOptions(
            ["emails"],
            lease_duration=timedelta(seconds=30),
            wait_timeout=timedelta(seconds=2),
            max_jobs=10,
        )
        jobs = await client.reserve(options)
        if jobs is None:
            print("no jobs ready")
            return
        for job in jobs:
            print("reserved", job.ctx)
            try:
                if job.ctx.job_type == "slow":
                    await job.ctx.extend(timedelta(minutes=5))  # more time for this one
                await client.ack(job.ctx)
            except JobNotFoundError:
                print("lease lost before the ack; the job will be redelivered")
            except Exception as err:
                dead = await client.nack(
                    job.ctx, RetryDirective.after(timedelta(seconds=30)), str(err)
                )
                print("nacked", job.ctx.id, "(dead-lettered)" if dead else "")


if __name__ == "__main__":
    asyncio.run(main())
