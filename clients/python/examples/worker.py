"""A Worker with two handlers, a catch-all, auto-extended leases and signal handling.

    SEPP_ADDR=127.0.0.1:50051 python examples/worker.py

SIGINT or SIGTERM stops it gracefully: no new jobs, and it exits once the jobs in flight are
settled.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from datetime import timedelta

from sepp import HandlerError, JobCtx, Payload, SeppClient, Worker

ADDR = os.environ.get("SEPP_ADDR", "127.0.0.1:50051")


async def send_email(user: int, ctx: JobCtx) -> None:
    print(f"welcoming user {user} (job {ctx.id}, attempt {ctx.attempt})", flush=True)


async def main() -> None:
    logging.basicConfig(level=logging.INFO)
    async with await SeppClient.connect(ADDR) as client:
        worker = Worker(
            client,
            ["emails"],
            lease_duration=timedelta(seconds=30),
            max_in_flight=32,
            auto_extend=True,
        )

        @worker.handler("send_welcome")
        async def send_welcome(payload: Payload | None, ctx: JobCtx) -> None:
            if payload is None:
                raise HandlerError.permanent("a welcome email needs a payload")
            user = json.loads(payload.data)["user"]
            # Bound the work: a handler that hangs would never settle its job.
            await asyncio.wait_for(send_email(user, ctx), timeout=10)

        @worker.handler("send_receipt")
        async def send_receipt(payload: Payload | None, ctx: JobCtx) -> None:
            raise HandlerError.retry_after("payment service unavailable", timedelta(seconds=30))

        @worker.catch_all
        async def fallback(payload: Payload | None, ctx: JobCtx) -> None:
            logging.warning("no handler for %s; dropping job %s", ctx.job_type, ctx.id)

        handle = worker.shutdown_handle()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, handle.shutdown)
        await worker.run()
        print("worker stopped", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
